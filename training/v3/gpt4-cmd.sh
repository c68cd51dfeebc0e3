#!/usr/bin/env bash
# Stage 4 of the v3 GPT: 1,400 more steps from stage 3, for prompt fidelity (more epochs).
# From the run folder out/v3.
exec bash "$(dirname "$0")/gpt-stage.sh" gpt3 gpt4 "${STEPS:-1400}" 3 "$@"
