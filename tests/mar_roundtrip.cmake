# Round trip of MAR checkpoints through `adtree convert --mar` (issue "MAR checkpoints"):
# tests/mar/reference.py writes a small MAR and the released B shape with random weights in MAR's
# checkpoint layout (no download, nothing committed) and a small kl16.ckpt; the CLI converts them
# and must report the parameter count the reference computed, refuse what it cannot know or must
# not overwrite, and leave nothing behind when a checkpoint is damaged.
# Exit code 77 (ctest SKIP_RETURN_CODE) when Python has no torch.
#   cmake -DADTREE=<adtree> -DSOURCE=<repo> -DWORK=<dir> [-DPYTHON=/usr/bin/python3] -P mar_roundtrip.cmake
include(${CMAKE_CURRENT_LIST_DIR}/python_roundtrip.cmake)

function(run_fails expect)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "should have failed: ${ARGN}")
  endif()
  string(FIND "${err}" "${expect}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "expected '${expect}' in the error of ${ARGN}, got:\n${err}")
  endif()
endfunction()

set(small ${WORK}/mar_roundtrip_small)
file(REMOVE_RECURSE ${small})
run(nice -n 5 ${PYTHON} tests/mar/reference.py --out ${small}/ckpt)
file(READ ${small}/ckpt/meta.json meta)
string(JSON params GET "${meta}" parameters)
set(ck ${small}/ckpt/checkpoint-last.pth)
set(vae ${small}/ckpt/kl16.ckpt)
run_fails("--n-head" ${ADTREE} convert --mar ${ck} --kl16 ${vae} --out ${small}/model --quiet)
run(${ADTREE} convert --mar ${ck} --kl16 ${vae} --n-head 4 --out ${small}/model --quiet)
string(FIND "${out}" "${params} parameters (from 'model_ema')" at)
if(at EQUAL -1)
  message(FATAL_ERROR "expected ${params} parameters from model_ema, got:\n${out}")
endif()
run_fails("already exists" ${ADTREE} convert --mar ${ck} --kl16 ${vae} --n-head 4
          --out ${small}/model --quiet)
run(${ADTREE} convert --mar ${ck} --kl16 ${vae} --n-head 4 --out ${small}/model --force --quiet)
run_fails("--kl16" ${ADTREE} convert --mar ${ck} --n-head 4 --out ${small}/other --quiet)
# A damaged checkpoint: a clear error, and no model directory left behind.
execute_process(COMMAND head -c 200000 ${ck} OUTPUT_FILE ${small}/cut.pth)
run_fails("cut.pth" ${ADTREE} convert --mar ${small}/cut.pth --kl16 ${vae} --n-head 4
          --out ${small}/cut --quiet)
if(EXISTS ${small}/cut)
  message(FATAL_ERROR "a failed conversion left ${small}/cut behind")
endif()

# The released B shape: 208M parameters, its heads from the saved model name (mar_base).
set(big ${WORK}/mar_roundtrip_B)
file(REMOVE_RECURSE ${big})
run(nice -n 5 ${PYTHON} tests/mar/reference.py --out ${big}/ckpt --shapes B)
file(READ ${big}/ckpt/meta.json meta)
string(JSON params GET "${meta}" parameters)
run(${ADTREE} convert --mar ${big}/ckpt/checkpoint-last.pth --kl16 ${vae} --out ${big}/model
    --dtype bf16 --quiet)
string(FIND "${out}" "12 heads, head 6 x 1024, ${params} parameters" at)
if(at EQUAL -1)
  message(FATAL_ERROR "expected MAR-B's 12 heads and ${params} parameters, got:\n${out}")
endif()
file(REMOVE_RECURSE ${big})
message("MAR round trip: small and B converted")
