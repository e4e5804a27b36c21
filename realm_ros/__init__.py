"""realm_ros: paired real and simulated rollouts of manipulation policies on a Franka Panda."""

__version__ = '0.1.0'
