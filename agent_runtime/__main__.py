"""`python -m agent_runtime`: run this container's agent."""

import sys

from agent_runtime.process.main import main

sys.exit(main())
