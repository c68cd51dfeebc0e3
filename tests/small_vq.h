// The small VQ shape the VQ tests share: three levels (attention at the lowest), 8 groups.
#pragma once
#include "model/llamagen/vq.h"

namespace adtree::testing {

inline model::VqConfig small_vq_config() {
  model::VqConfig c;
  c.codebook_size = 64;
  c.codebook_dim = 8;
  c.ch = 32;
  c.ch_mult = {1, 2, 2};
  c.z_channels = 32;
  c.num_res_blocks = 2;
  c.norm_groups = 8;
  return c;
}

}  // namespace adtree::testing
