# Warnings for the project's own code only; third-party headers come in as SYSTEM includes.
function(adtree_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

# libtorch's headers are large: one precompiled header per target family keeps a clean 2-core build
# short. Lighter headers than torch/torch.h: the ATen tensor API, autograd and the functional nn ops.
function(adtree_torch_pch target)
  target_precompile_headers(${target} PRIVATE "${PROJECT_SOURCE_DIR}/core/util/torch_pch.h")
endfunction()
