"""ROS-free core of realm_ros: types, robot constants, control law, configs, errors.

Nothing under ``realm_ros.core`` imports rclpy, ROS message packages or a simulator SDK;
``test/unit/test_layering.py`` enforces it. Nodes and backends adapt this core.
"""
