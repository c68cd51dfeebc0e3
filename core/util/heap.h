// Keeping freed memory for reuse: training steps and MAR's full-recompute passes allocate the same
// large activation buffers again and again. glibc would mmap and unmap each one, and the kernel's
// zero-filled page faults then cost a third of a CPU training step (the GPT: 2150 -> 3250
// tokens/s) and half of a MAR-B pass on a virtual machine (docs/mar.md). Every block stays on the
// heap, never trimmed. Process-wide; a no-op outside glibc.
#pragma once

namespace adtree {

void keep_allocations_on_heap();

}  // namespace adtree
