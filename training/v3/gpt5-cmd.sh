#!/usr/bin/env bash
# Stage 5 of the v3 GPT: 2,400 more steps from stage 4, for prompt fidelity (issue 38: until the
# 192-prompt fidelity passes 0.6 or stops improving). From the run folder out/v3; after an
# interruption, the same command with --resume goes on from the last checkpoint (every 100 steps).
exec bash "$(dirname "$0")/gpt-stage.sh" gpt4 gpt5 "${STEPS:-2400}" 5 "$@"
