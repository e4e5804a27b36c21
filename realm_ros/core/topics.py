"""Names of the shared world interface, relative to a world's namespace (``/real``, ``/sim``).

Plain strings (no ROS import), so the ROS layer (``realm_ros.ros.topics`` re-exports this
module), the bag reader and writer (``io/bags.py``) and the launch files share one spelling.
"""

JOINT_STATES = 'joint_states'
COMMAND = 'command'
INSTRUCTION = 'instruction'
#: diagnostic_msgs/DiagnosticStatus: the running episode's tiered progression.
PROGRESS = 'progress'
#: std_msgs/String (JSON): simulator-only scene state (object poses, contacts, articulations)
#: for scoring and scripted policies. Published by simulated worlds and, re-published by the
#: bridge, by the digital real; never by a real arm.
PRIVILEGED_STATE = 'privileged_state'
#: What the digital real (node ``digital_real``) publishes its privileged state on: a
#: digital-real-only facility, named so that nobody mistakes it for something a real robot offers.
DIGITAL_REAL_PRIVILEGED_STATE = 'digital_real/privileged_state'
#: std_srvs/Trigger: start the next episode (world_node).
RESET = 'reset'
#: std_srvs/SetBool on world_node: after a reflex, ``data: true`` is the operator's confirmation
#: that the arm may be re-activated.
RECOVER = 'recover'
#: rosgraph_msgs/Clock, absolute: a lockstep world publishes simulated time here (``use_sim_time``
#: nodes follow it); a graph with two lockstep worlds remaps it per namespace.
CLOCK = '/clock'
#: diagnostic_msgs/DiagnosticStatus from a world's policy node: level ERROR = the policy failed
#: for infrastructure reasons (server down, timeout, malformed answer); the episode is not scored.
POLICY_STATUS = 'policy/status'
#: diagnostic_msgs/DiagnosticStatus from world_node: level ERROR = the world failed for
#: infrastructure reasons (a franka reflex, a stalled robot side); the episode is not scored and
#: the world holds until the next reset.
WORLD_STATUS = 'world/status'
#: std_msgs/String (JSON, latched): ``{"spec": EpisodeSpec, "stamp": s, "instruction": str}``,
#: published by world_node on every reset; policy_node resets its policy when it changes.
EPISODE = 'episode'


def camera_image(name: str) -> str:
    """Return the image topic of camera ``name``."""
    return f'cameras/{name}/image'


def camera_info(name: str) -> str:
    """Return the camera_info topic of camera ``name``."""
    return f'cameras/{name}/camera_info'
