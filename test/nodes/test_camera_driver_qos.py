"""The franka bridge takes images and camera_info from drivers with the QoS drivers publish.

realsense2_camera, zed_wrapper and usb_cam publish ``camera_info`` volatile, next to every
image, many of them best effort (rclcpp's SensorDataQoS). A transient-local subscription
matches no volatile publisher, so with cameras on no camera_info arrived and ``world_node``
exited 2. Here a driver-shaped publisher (best effort, volatile, 15 Hz) serves one camera to a
``world_node`` bridged to a running digital_real; the world must come up with that camera.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from rclpy.qos import qos_profile_sensor_data
from rostest import CLIENT_SETTLE_S, ros_node, run_process
from sensor_msgs.msg import CameraInfo, Image
from std_srvs.srv import SetBool

from realm_ros.ros import convert, topics

pytestmark = [pytest.mark.ros, pytest.mark.slow]


def _wait_for(path, pattern, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors='replace')
        if pattern in text or proc.poll() is not None:
            return text
        time.sleep(0.2)
    return path.read_text(errors='replace')


def test_bridge_takes_camera_info_from_a_volatile_best_effort_driver(tmp_path):
    robot_ns = '/camqos/franka'
    with ros_node('camera_driver') as (node, executor):
        node_ns = f'{robot_ns}/{topics.camera_image("exterior_1")}'
        image_pub = node.create_publisher(Image, node_ns, qos_profile_sensor_data)
        # The start-up reset moves the arm only once the operator confirms (issue 26).
        confirm = node.create_client(SetBool, '/camqos/franka_bridge/confirm_motion')
        info_pub = node.create_publisher(
            CameraInfo, f'{robot_ns}/{topics.camera_info("exterior_1")}', qos_profile_sensor_data)
        frame = np.zeros((180, 320, 3), dtype=np.uint8)
        stop = threading.Event()

        def drive():
            while not stop.is_set():
                stamp = node.get_clock().now().to_msg()
                image_pub.publish(convert.image_to_msg(frame, stamp, 'exterior_1_optical_frame'))
                info_pub.publish(convert.camera_info(320, 180, 60.0, stamp,
                                                     'exterior_1_optical_frame'))
                executor.spin_once(timeout_sec=1.0 / 15.0)

        thread = threading.Thread(target=drive, daemon=True)
        thread.start()
        try:
            robot = ['digital_real', '--ros-args', '-p', 'lockstep:=false', '-r',
                     f'__ns:={robot_ns}']
            world = ['world_node', '--ros-args', '-r', '__ns:=/camqos', '-p', 'backend:=franka',
                     '-p', 'franka.arm_id:=fr3', '-p', 'franka.gripper:=width_topic',
                     '-p', f'franka.namespace:={robot_ns}',
                     '-p', 'franka.digital_real:=false', '-p', "franka.robot_state_topic:=''",
                     '-p', 'camera_rate_hz:=15.0',
                     '-p', 'lockstep:=false',
                     '-p', 'cameras:=[exterior_1]']
            with run_process(robot, tmp_path / 'robot.log') as robot_proc:
                assert 'up' in _wait_for(tmp_path / 'robot.log', 'digital real', robot_proc)
                with run_process(world, tmp_path / 'world.log') as proc:
                    text = _wait_for(tmp_path / 'world.log', 'for the operator to confirm', proc)
                    assert confirm.wait_for_service(timeout_sec=30.0), text
                    # drive() spins this executor, so rostest.call_service cannot: its wait
                    # for a newly matched client to settle (a response sent before is lost).
                    time.sleep(CLIENT_SETTLE_S)
                    answer = confirm.call_async(SetBool.Request(data=True))  # spun by drive()
                    text = _wait_for(tmp_path / 'world.log', "world 'franka' up", proc)
                    assert answer.done() and answer.result().success, text
                    assert "cameras ['exterior_1']" in text, text
                    assert proc.poll() is None, text
        finally:
            stop.set()
            thread.join(timeout=2.0)
