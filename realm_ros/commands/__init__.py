"""Subcommands of ``realm-ros`` (see ``realm_ros/cli.py``)."""
