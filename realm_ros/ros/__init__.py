"""Thin ROS 2 adapters: message <-> core conversions, parameter declaration, QoS profiles.

Everything here imports rclpy or message packages; ``realm_ros.core`` never does.
"""
