"""ROS-free programs over the layers below (rank 2 of test/unit/test_layering.py): the paired
evaluation's half (``paired``), its report (``report``), the vision demo (``vision_demo``),
demonstrations for datasets (``demonstrations``) and the robot description (``description``)."""
