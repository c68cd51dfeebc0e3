# adtree-figures as a user drives it: a random micro model, two traced ADT-Tree runs (T = 0 and
# T = 1), a small drafter log; every figure must come out as a 1200x800 PNG, a missing input must
# only skip its figure, and bad input must fail with a one-line message naming the file.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run_ok out_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected success: ${ARGN}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}\n${err}" PARENT_SCOPE)
endfunction()

function(run_fails expect)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 1)
    message(FATAL_ERROR "expected status 1, got ${rc}: ${ARGN}\n${out}\n${err}")
  endif()
  string(FIND "${err}" "${expect}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "expected '${expect}' in the error of ${ARGN}, got:\n${err}")
  endif()
  string(STRIP "${err}" stripped)
  string(FIND "${stripped}" "\n" nl)
  if(NOT nl EQUAL -1)
    message(FATAL_ERROR "the error of ${ARGN} is not one line:\n${err}")
  endif()
endfunction()

# A 1200x800 PNG: the signature, then the IHDR chunk's width and height (bytes 16-23).
function(check_png path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "adtree-figures did not write ${path}")
  endif()
  file(READ "${path}" head LIMIT 24 HEX)
  string(SUBSTRING "${head}" 0 16 magic)
  string(SUBSTRING "${head}" 32 16 size)
  if(NOT magic STREQUAL "89504e470d0a1a0a" OR NOT size STREQUAL "000004b000000320")
    message(FATAL_ERROR "${path} is not a 1200x800 PNG (${head})")
  endif()
endfunction()

set(M ${WORK}/model)
run_ok(o ${ADTREE} model random --config micro --out ${M} --seed 3)
foreach(t 0 1)
  run_ok(o ${ADTREE} generate --model ${M} --prompt "a red cat" --seed 3 --method adt --temperature ${t}
         --budget 8 --out ${WORK}/adt-t${t}.png --stats ${WORK}/adt-t${t}.json --trace --quiet)
endforeach()
run_ok(o ${ADTREE} generate --model ${M} --prompt "a red cat" --seed 3 --method adt --budget 8
       --out ${WORK}/untraced.png --stats ${WORK}/untraced.json --quiet)
file(WRITE ${WORK}/metrics.jsonl
  "{\"event\":\"start\",\"kind\":\"drafter\",\"step\":0,\"steps\":40}\n"
  "{\"loss\":1.5,\"step\":10}\n{\"loss\":1.2,\"step\":20}\n"
  "{\"eval\":{\"validation\":{\"top1\":0.3,\"top3\":0.5,\"accept_t1\":0.4},\"self_samples_heldout\":{\"top1\":0.25,\"top3\":0.45,\"accept_t1\":0.35}},\"step\":20}\n"
  "{\"loss\":1.4,\"step\":30}\n{\"event\":\"resume\",\"kind\":\"drafter\",\"step\":20,\"steps\":40}\n"
  "{\"loss\":1.1,\"step\":30}\n{\"loss\":0.9,\"step\":40}\n"
  "{\"eval\":{\"validation\":{\"top1\":0.4,\"top3\":0.6,\"accept_t1\":0.5}},\"final\":true,\"step\":40}\n")

# Everything: five PNGs, one line each.
set(OUT ${WORK}/figs)
run_ok(o ${FIGURES} --out ${OUT} --drafter-log ${WORK}/metrics.jsonl ${WORK}/adt-t0.json ${WORK}/adt-t1.json)
set(all fig1-drafter-accuracy.png fig2-depth-matrix.png fig3-acceptance-histograms.png fig4-top1-map.png
        fig5-region-distributions.png)
foreach(f ${all})
  check_png(${OUT}/${f})
  string(FIND "${o}" "wrote ${OUT}/${f}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "adtree-figures did not report ${f}:\n${o}")
  endif()
endforeach()

# No drafter log, no traces: Fig. 1 and Fig. 5 are skipped with a message, the rest still drawn.
set(OUT2 ${WORK}/figs2)
run_ok(o ${FIGURES} --out ${OUT2} ${WORK}/untraced.json)
foreach(f fig2-depth-matrix.png fig3-acceptance-histograms.png fig4-top1-map.png)
  check_png(${OUT2}/${f})
endforeach()
foreach(f fig1-drafter-accuracy.png fig5-region-distributions.png)
  if(EXISTS ${OUT2}/${f})
    message(FATAL_ERROR "${f} written without its input")
  endif()
  string(FIND "${o}" "skipped ${f}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "no skip message for ${f}:\n${o}")
  endif()
endforeach()

# Bad input.
run_fails("${WORK}/missing.json: no such file" ${FIGURES} --out ${OUT2} ${WORK}/missing.json)
file(WRITE ${WORK}/other.json "{\"hello\": 1}")
run_fails("${WORK}/other.json: not an ADT-Tree statistics file" ${FIGURES} --out ${OUT2}
          ${WORK}/adt-t0.json ${WORK}/other.json)
file(WRITE ${WORK}/broken.json "{\"format\": \"adtree-stats\", ")
run_fails("${WORK}/broken.json: not a statistics file" ${FIGURES} --out ${OUT2} ${WORK}/broken.json)
run_fails("${WORK}/untraced.json: no step traces" ${FIGURES} --out ${OUT2} --only 5 ${WORK}/untraced.json)
run_fails("${WORK}/missing.jsonl: no such file" ${FIGURES} --out ${OUT2} --drafter-log ${WORK}/missing.jsonl
          ${WORK}/adt-t0.json)
run_fails("${WORK}/adt-t0.png:1: not a drafter training log" ${FIGURES} --out ${OUT2} --drafter-log
          ${WORK}/adt-t0.png ${WORK}/adt-t0.json)
run_fails("--out DIR is required" ${FIGURES} ${WORK}/adt-t0.json)
