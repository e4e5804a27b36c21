"""Progress scorers: read an episode's video and score its progress beside the rubric.

The interface and the aggregation are pure (:mod:`realm_ros.core.scoring`); the scorers here
talk to what does the looking: :mod:`.vlm` to a vision-language model behind an
OpenAI-compatible chat endpoint (vLLM, Ollama, a hosted one). docs/scoring.md.
"""
