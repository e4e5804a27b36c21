"""The PhysX twin: Isaac Sim's PhysX without Kit (``ovphysx``) over the twin's USD scene.

``common`` holds what the kit-less world and the Isaac Sim world share (controller, parameter
mapping, latency); ``world`` is the kit-less :class:`~realm_ros.core.world.World`.
"""
