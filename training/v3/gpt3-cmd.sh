#!/usr/bin/env bash
# Stage 3 of the v3 GPT: one longer cosine schedule (3,800 steps) from stage 2's weights, in place
# of several short restarts. From the run folder out/v3.
exec bash "$(dirname "$0")/gpt-stage.sh" gpt2 gpt3 "${STEPS:-3800}" 2 "$@"
