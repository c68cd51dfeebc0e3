# Round trip of the released LlamaGen shapes: tests/llamagen/reference.py writes a
# checkpoint with random weights in the exact B / L / XL layout (no download, nothing committed),
# tools/convert_llamagen.py converts it, and `adtree info --json --no-vq` must load it and report
# the configuration and parameter count the reference computed, plus its peak resident memory.
# XL is 3.1 GB fp32 (written, converted, memory-mapped): the point is that it loads.
# Exit code 77 (ctest SKIP_RETURN_CODE) when Python has no torch.
#   cmake -DADTREE=<adtree> -DSOURCE=<repo> -DWORK=<dir> [-DPYTHON=/usr/bin/python3]
#         [-DSIZES=B;L;XL] -P llamagen_roundtrip.cmake
if(NOT SIZES)
  set(SIZES B L XL)
endif()
include(${CMAKE_CURRENT_LIST_DIR}/python_roundtrip.cmake)

function(expect_eq what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: got '${got}', expected '${want}'")
  endif()
endfunction()

foreach(size IN LISTS SIZES)
  set(dir ${WORK}/llamagen_roundtrip_${size})
  file(REMOVE_RECURSE ${dir})
  run(nice -n 5 ${PYTHON} tests/llamagen/reference.py --out ${dir}/ckpt --shapes ${size})
  file(READ ${dir}/ckpt/meta.json meta)
  string(JSON model GET "${meta}" model)
  string(JSON want_params GET "${meta}" num_params gpt)
  # The checkpoint's file name carries the model name, as a user's download does.
  file(RENAME ${dir}/ckpt/gpt.pt ${dir}/ckpt/${model}.pt)
  run(nice -n 5 ${PYTHON} tools/convert_llamagen.py --gpt ${dir}/ckpt/${model}.pt --out ${dir}/model)
  file(REMOVE_RECURSE ${dir}/ckpt)  # halve the disk space before loading
  run(${ADTREE} info --model ${dir}/model --json --no-vq)
  set(info "${out}")
  string(JSON params GET "${info}" gpt params)
  expect_eq("${size}: parameters" "${params}" "${want_params}")
  foreach(key dim n_layer n_head vocab_size num_classes)
    string(JSON got GET "${info}" gpt config ${key})
    string(JSON want GET "${meta}" gpt ${key})
    expect_eq("${size}: ${key}" "${got}" "${want}")
  endforeach()
  string(JSON grid GET "${info}" grid 0)
  string(JSON want_grid GET "${meta}" gpt grid 0)
  expect_eq("${size}: grid" "${grid}" "${want_grid}")
  string(JSON rss GET "${info}" peak_rss_bytes)
  string(JSON secs GET "${info}" load_seconds)
  math(EXPR rss_mib "${rss} / 1048576")
  message("${size} (${model}): ${params} parameters, loaded in ${secs} s, peak RSS ${rss_mib} MiB")
  file(REMOVE_RECURSE ${dir})
endforeach()
