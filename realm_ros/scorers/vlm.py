"""A vision-language model as a progress scorer, over an OpenAI-compatible chat endpoint.

RobotArena-infinity's protocol (:mod:`realm_ros.core.scoring`): frames at 1 per second; for each
frame after the first, one chat request showing the initial frame, the frames so far and the
current frame (plus the privileged state, in sim, if asked), answered with ``## Reflection``
then ``## Progress Score`` (0-100); three passes; the per-frame median; the mean of the last
30 %. Any server that speaks ``POST {endpoint}/chat/completions`` with image parts as data URLs
works: vLLM (``vllm serve MODEL``, endpoint ``http://HOST:8000/v1``), Ollama
(``http://HOST:11434/v1``), a hosted API (key from ``--api-key-env``).

A request that fails (HTTP error, time-out, no score in the answer) is retried ``retries``
times; after that its pass ends there, shorter than the others, and is dropped by the median
(as RobotArena-infinity drops runs of a different length). If every pass fails the episode is
not scored: :class:`~realm_ros.core.errors.InfrastructureError`.
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any, Mapping, Sequence
import urllib.error
import urllib.request

import numpy as np

from realm_ros.core import scoring
from realm_ros.core.errors import ConfigError, DataError, InfrastructureError

SYSTEM_PROMPT = (
    'You are an expert roboticist judging how far a robot arm has progressed in a manipulation '
    'task, from camera frames of one episode.')

ANSWER_FORMAT = (
    'Answer in exactly this format:\n## Reflection\n<what the robot has done so far and what '
    'remains>\n## Progress Score\n<a number from 0 to 100: 0 = nothing done (the initial '
    'frame), 100 = the task is complete>')


def _data_url(frame: np.ndarray, max_side: int) -> str:
    import cv2
    image = np.asarray(frame)
    if image.ndim != 3 or image.shape[2] != 3:
        raise DataError(f'a frame must be (H, W, 3) RGB, got shape {image.shape}')
    h, w = image.shape[:2]
    scale = max_side / max(h, w)
    if scale < 1.0:
        image = cv2.resize(image, (max(1, round(w * scale)), max(1, round(h * scale))),
                           interpolation=cv2.INTER_AREA)
    ok, data = cv2.imencode('.jpg', cv2.cvtColor(image.astype(np.uint8), cv2.COLOR_RGB2BGR),
                            [cv2.IMWRITE_JPEG_QUALITY, 90])
    if not ok:
        raise DataError('could not encode a frame as JPEG')
    return 'data:image/jpeg;base64,' + base64.b64encode(data.tobytes()).decode('ascii')


def privileged_text(state: Mapping[str, Any]) -> str:
    """Return the privileged state as short text lines (numbers rounded to 3 decimals)."""
    def fmt(value: Any) -> str:
        if isinstance(value, (list, tuple, np.ndarray)):
            return '[' + ', '.join(fmt(v) for v in value) + ']'
        if isinstance(value, (float, np.floating)):
            return f'{float(value):.3f}'
        return str(value)
    return '\n'.join(f'- {key}: {fmt(value)}' for key, value in state.items())


class VlmScorer:
    """Scores episodes by asking a VLM behind an OpenAI-compatible endpoint.

    Args:
        endpoint: the API's base URL, e.g. ``http://gpu-box:8000/v1``.
        model: the model name the server serves.
        runs: passes over the episode (median per frame).
        fps: frames per second shown.
        privileged: include the privileged state per frame (sim and digital real), if given.
        task_ranges: ``{task: (floor, ceiling)}`` raw-score range for per-task rescaling.
        api_key_env: environment variable holding an API key (sent as a bearer token if set).
        timeout_s: seconds per request.
        retries: extra attempts per request before its pass ends.
        max_side: frames are downscaled to at most this many pixels on their longer side.
        temperature: sampling temperature sent with each request (``None``: the server's).
    """

    def __init__(self, endpoint: str, model: str, runs: int = scoring.RUNS,
                 fps: float = scoring.SAMPLE_FPS, privileged: bool = True,
                 task_ranges: Mapping[str, tuple[float, float]] | None = None,
                 api_key_env: str = 'OPENAI_API_KEY', timeout_s: float = 120.0,
                 retries: int = 1, max_side: int = 448,
                 temperature: float | None = None) -> None:
        if not endpoint.startswith(('http://', 'https://')):
            raise ConfigError(f'--endpoint must be an http(s) URL, got {endpoint!r}')
        if not model:
            raise ConfigError('--model must name the model the endpoint serves')
        if runs < 1:
            raise ConfigError(f'--runs must be >= 1, got {runs}')
        self.url = endpoint.rstrip('/') + '/chat/completions'
        self.model = model
        self.name = f'vlm:{model}'
        self.runs = int(runs)
        self.fps = float(fps)
        self.privileged = privileged
        self.task_ranges = dict(task_ranges or {})
        self.api_key = os.environ.get(api_key_env, '') if api_key_env else ''
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.max_side = int(max_side)
        self.temperature = temperature

    def messages(self, episode: scoring.EpisodeFrames, indices: Sequence[int],
                 t: int) -> list[dict[str, Any]]:
        """Return the chat messages asking for the progress at sampled frame ``t`` (>= 1)."""
        def image(i: int) -> dict[str, Any]:
            return {'type': 'image_url',
                    'image_url': {'url': _data_url(episode.frames[i], self.max_side)}}

        so_far = indices[1:t]
        content: list[dict[str, Any]] = [
            {'type': 'text', 'text': f'Task: "{episode.instruction}".\nThe first image is the '
             "episode's initial frame (0 % progress)."},
            image(indices[0])]
        if so_far:
            content.append({'type': 'text', 'text': f'The next {len(so_far)} image(s) are the '
                            'frames so far, one per second, in order.'})
            content += [image(i) for i in so_far]
        content.append({'type': 'text', 'text': f'The last image is the current frame '
                        f'(t = {episode.times_s[indices[t]] - episode.times_s[0]:.1f} s).'})
        content.append(image(indices[t]))
        if self.privileged and episode.privileged is not None:
            content.append({'type': 'text', 'text': 'Privileged simulator state at the current '
                            'frame:\n' + privileged_text(episode.privileged[indices[t]])})
        content.append({'type': 'text', 'text': ANSWER_FORMAT})
        return [{'role': 'system', 'content': SYSTEM_PROMPT},
                {'role': 'user', 'content': content}]

    def _ask(self, messages: list[dict[str, Any]]) -> str:
        body: dict[str, Any] = {'model': self.model, 'messages': messages}
        if self.temperature is not None:
            body['temperature'] = self.temperature
        headers = {'Content-Type': 'application/json'}
        if self.api_key:
            headers['Authorization'] = f'Bearer {self.api_key}'
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(),
                                         headers=headers, method='POST')
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
            reply = json.loads(response.read())
        try:
            return str(reply['choices'][0]['message']['content'])
        except (KeyError, IndexError, TypeError):
            raise DataError(f'{self.url}: not a chat completion: {str(reply)[:200]}') from None

    def _progress(self, messages: list[dict[str, Any]]) -> float | None:
        for _ in range(self.retries + 1):
            try:
                return scoring.parse_progress(self._ask(messages))
            except (OSError, urllib.error.URLError, ValueError, DataError):
                continue  # HTTPError and time-outs are OSErrors; bad JSON a ValueError
        return None

    def score(self, episode: scoring.EpisodeFrames) -> scoring.ScoredEpisode:
        """Return the episode's curve and score (see the module docstring)."""
        indices = scoring.sample_indices(episode.times_s, self.fps)
        runs = []
        for _ in range(self.runs):
            curve = [0.0]  # the initial frame is 0 % by definition
            for t in range(1, len(indices)):
                value = self._progress(self.messages(episode, indices, t))
                if value is None:
                    break  # this pass ends short and is dropped by the median
                curve.append(value)
            runs.append(curve)
        if all(len(r) < len(indices) for r in runs):
            raise InfrastructureError(
                f'{self.url}: no pass over the episode finished ({self.runs} tried); is the '
                f'server up and serving {self.model!r}?')
        times = [episode.times_s[i] for i in indices]
        return scoring.aggregate(self.name, times, runs, self.task_ranges.get(episode.task))


__all__ = ['ANSWER_FORMAT', 'SYSTEM_PROMPT', 'VlmScorer', 'privileged_text']
