"""The arena: blind pairwise judging of episode videos in a browser (docs/arena.md).

``catalog`` finds the videos of paired-evaluation run folders and groups them into matchups
(same world, task, perturbation, intensity and seed; different policies); ``store`` keeps the
assignments and judgments in SQLite; ``selection`` picks the next pair (the policies whose order
is least certain first); ``ranking`` fits Bradley-Terry to the judgments
(:mod:`realm_ros.core.preferences`) beside the rubric ranking; ``server`` is the web page
(FastAPI + uvicorn, imported only by ``realm-ros arena serve``).
"""
