// Pieces every trainer shares, one header for all of them: run options and config
// (train/config.h), seeded per-step generators and data order (train/batches.h), AdamW with weight
// decay on matrices only, gradient clipping and the learning-rate schedule (train/optimizer.h),
// resumable checkpoints (train/checkpoint.h), the progress line and the metrics log
// (train/reporting.h), the files of a run folder (train/run_files.h) and the loop that drives them
// (train/loop.h). Code that needs only some of them includes those.
#pragma once
#include "train/batches.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/loop.h"
#include "train/optimizer.h"
#include "train/reporting.h"
#include "train/run_files.h"
