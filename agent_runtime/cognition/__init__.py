"""The `checkpoint` context strategy: the transcript stays whole on disk, only the turns after
the consolidation checkpoint are replayed (within a bounded window), WORKING_MEMORY.md is
injected into the prompt, and facts.md, preferences.md and projects.md are read on demand.

Three jobs maintain those files, each writing only its own artifact, with its own checkpoint,
its own model and a JSON run record (`runner.CognitionRunner`):

- review        -> cognition/review.json (flags read only by the two other jobs)
- consolidation -> workspace/cognition/WORKING_MEMORY.md, and the replay checkpoint
- extraction    -> workspace/cognition/{facts,preferences,projects}.md
"""
