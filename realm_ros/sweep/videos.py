"""Episode videos for sweep cells: a :class:`~realm_ros.sweep.runner.CellHook` that records one
camera of every cell's episode as ``OUT/videos/<world>/<episode id>.webm`` (the arena's layout,
:func:`realm_ros.io.video.video_relpath`) and names it in the cell's record (``video``)."""

from __future__ import annotations

import pathlib
from typing import Any, Mapping

from realm_ros.core.episode import StepCallback
from realm_ros.core.sweep import Cell
from realm_ros.io.video import EpisodeVideo, VideoOnStep, video_relpath


class VideoHook:
    """Records ``camera`` of each cell's episode beside the sweep's records.

    Picklable (it travels to process and Ray workers); each worker's copy holds the video of
    the cell it is running. A cell's world must render ``camera`` (the command adds it to every
    cell's cameras). A worker that dies mid-cell leaves only a ``.partial.webm``; the retried
    cell writes the video anew.
    """

    def __init__(self, out_dir: str | pathlib.Path, camera: str = 'exterior_1') -> None:
        self.out_dir = str(out_dir)
        self.camera = camera
        self._video: EpisodeVideo | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {'out_dir': self.out_dir, 'camera': self.camera, '_video': None}

    def begin(self, cell: Cell) -> StepCallback:
        """Open the cell's video and return the step callback that feeds it."""
        relpath = video_relpath(cell.world, cell.spec.pair_id)
        self._video = EpisodeVideo(pathlib.Path(self.out_dir) / relpath)
        return VideoOnStep(self._video, self.camera)

    def end(self, cell: Cell, record: Mapping[str, Any]) -> Mapping[str, Any]:
        """Finish the cell's video; the record names it if it has frames."""
        video, self._video = self._video, None
        if video is None or video.close() == 0:
            return {}
        return {'video': video_relpath(cell.world, cell.spec.pair_id)}
