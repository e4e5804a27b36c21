"""Episode videos for sweep cells: a :class:`~realm_ros.sweep.runner.CellHook` that records one
or more cameras of every cell's episode, the first as ``OUT/videos/<world>/<episode id>.webm``
(the arena's layout, :func:`realm_ros.io.video.video_relpath`), each further one as
``OUT/videos/<world>/<camera>/<episode id>.webm``, and names them in the cell's record
(``video``, and ``camera_videos`` with several: :func:`realm_ros.io.video.video_fields`)."""

from __future__ import annotations

import pathlib
from typing import Any, Mapping

from realm_ros.core.episode import StepCallback
from realm_ros.core.sweep import Cell
from realm_ros.io.video import (
    EpisodeVideo,
    VideoOnStep,
    camera_relpath,
    video_fields,
    video_relpath,
)


class VideoHook:
    """Records ``cameras`` of each cell's episode beside the sweep's records.

    Picklable (it travels to process and Ray workers); each worker's copy holds the videos of
    the cell it is running. A cell's world must render the cameras (the command adds them to
    every cell's cameras). A worker that dies mid-cell leaves only ``.partial.webm`` files; the
    retried cell writes the videos anew.
    """

    def __init__(self, out_dir: str | pathlib.Path,
                 cameras: str | tuple[str, ...] = ('exterior_1',)) -> None:
        self.out_dir = str(out_dir)
        self.cameras = (cameras,) if isinstance(cameras, str) else tuple(cameras)
        self._videos: dict[str, EpisodeVideo] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {'out_dir': self.out_dir, 'cameras': self.cameras, '_videos': {}}

    def _relpaths(self, cell: Cell) -> dict[str, str]:
        first = video_relpath(cell.world, cell.spec.pair_id)
        return {c: camera_relpath(first, c, self.cameras) for c in self.cameras}

    def begin(self, cell: Cell) -> StepCallback:
        """Open the cell's videos and return the step callback that feeds them."""
        self._videos = {c: EpisodeVideo(pathlib.Path(self.out_dir) / path)
                        for c, path in self._relpaths(cell).items()}
        steps = [VideoOnStep(video, c) for c, video in self._videos.items()]
        if len(steps) == 1:
            return steps[0]
        return _Each(steps)

    def end(self, cell: Cell, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Finish the cell's videos; the record names those with frames."""
        videos, self._videos = self._videos, {}
        frames = {c: video.close() for c, video in videos.items()}
        return video_fields(self._relpaths(cell), frames) if videos else {}


class _Each:
    """One ``on_step`` callback calling several (a video per camera)."""

    def __init__(self, steps: list[VideoOnStep]) -> None:
        self.steps = steps

    def first(self, images: Mapping[str, Any]) -> None:
        """Record the first observation's frame of each camera."""
        for step in self.steps:
            step.first(images)

    def __call__(self, step: int, obs: Any, action: Any, progress: Any) -> None:
        for each in self.steps:
            each(step, obs, action, progress)
