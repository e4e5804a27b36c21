"""Reading and writing recorded data (rosbag2/MCAP) without ROS."""
