# The CLI as a user drives it: make a random model, generate a PNG and a stats JSON, and check that
# bad input fails with a one-line message and a non-zero status.
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

function(run_ok)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected success: ${ARGN}\n${out}\n${err}")
  endif()
endfunction()

function(run_fails expect)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "expected failure: ${ARGN}")
  endif()
  string(FIND "${err}" "${expect}" pos)
  if(pos EQUAL -1)
    message(FATAL_ERROR "expected '${expect}' in the error of ${ARGN}, got:\n${err}")
  endif()
endfunction()

run_ok(${ADTREE} model random --config micro --out ${WORK}/model --seed 3)
run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 1
       --out ${WORK}/image.png --stats ${WORK}/stats.json --scale 2 --quiet)
foreach(f image.png stats.json)
  if(NOT EXISTS "${WORK}/${f}")
    message(FATAL_ERROR "generate did not write ${f}")
  endif()
endforeach()
file(READ "${WORK}/image.png" png LIMIT 8 HEX)
if(NOT png STREQUAL "89504e470d0a1a0a")
  message(FATAL_ERROR "image.png is not a PNG (${png})")
endif()
file(READ "${WORK}/stats.json" stats)
string(JSON n GET "${stats}" summary tokens)
if(NOT n EQUAL 16)
  message(FATAL_ERROR "stats.json reports ${n} tokens, expected 16")
endif()
string(JSON tau GET "${stats}" summary tau)
string(JSON rows LENGTH "${stats}" grids depth)
if(NOT rows EQUAL 4)
  message(FATAL_ERROR "stats.json depth grid has ${rows} rows")
endif()
# Every draft-tree method at greedy gives AR's tokens (the random model ships a random draft head).
foreach(method ar static dynamic adt sjd pathspec sjd-pac)
  run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 1 --temperature 0
         --method ${method} --budget 8 --out ${WORK}/${method}.png --stats ${WORK}/${method}.json --quiet)
  file(READ "${WORK}/${method}.json" js)
  string(JSON toks_${method} GET "${js}" tokens)
endforeach()
foreach(method static dynamic adt sjd pathspec sjd-pac)
  if(NOT toks_${method} STREQUAL toks_ar)
    message(FATAL_ERROR "greedy ${method} tokens differ from AR:\n${toks_${method}}\n${toks_ar}")
  endif()
endforeach()
# Sampling at T = 1 with the default rule (shared-noise coupling): every lossless method commits
# AR's tokens for the same seed, and the statistics name the rule.
foreach(method ar static dynamic adt sjd pathspec sjd-pac)
  run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 5 --method ${method}
         --temperature 1 --out ${WORK}/t1-${method}.png --stats ${WORK}/t1-${method}.json --quiet)
  file(READ "${WORK}/t1-${method}.json" js)
  string(JSON t1_${method} GET "${js}" tokens)
  string(JSON rule GET "${js}" settings verify)
  if(NOT rule STREQUAL "coupled")
    message(FATAL_ERROR "${method} at T = 1 verified with '${rule}', not coupled")
  endif()
endforeach()
foreach(method static dynamic adt sjd pathspec sjd-pac)
  if(NOT t1_${method} STREQUAL t1_ar)
    message(FATAL_ERROR "coupled ${method} tokens at T = 1 differ from AR:\n${t1_${method}}\n${t1_ar}")
  endif()
endforeach()
# The linear CFG schedule (--cfg-schedule, a sampling entry of the settings table): coupled
# ADT-Tree still commits AR's tokens under it, and the statistics record it.
foreach(method ar adt)
  run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 5 --temperature 1
         --method ${method} --cfg 4 --cfg-schedule linear --out ${WORK}/lin-${method}.png
         --stats ${WORK}/lin-${method}.json --quiet)
  file(READ "${WORK}/lin-${method}.json" js)
  string(JSON lin_${method} GET "${js}" tokens)
  string(JSON schedule GET "${js}" settings sampling cfg_schedule)
  if(NOT schedule STREQUAL "linear")
    message(FATAL_ERROR "${method}: the statistics say cfg_schedule '${schedule}', not linear")
  endif()
endforeach()
if(NOT lin_adt STREQUAL lin_ar)
  message(FATAL_ERROR "coupled adt under a linear CFG schedule differs from AR:\n${lin_adt}\n${lin_ar}")
endif()
run_fails("--cfg-schedule must be constant or linear, not 'cosine'" ${ADTREE} generate
          --model ${WORK}/model --prompt "a red cat" --cfg-schedule cosine --out ${WORK}/bad.png)
# PJD with one row at a time is lossless: greedy and coupled T = 1 tokens are AR's. With several
# rows it is lossy and says so. CASCADE on a tree says so too.
run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 1 --temperature 0
       --method pjd --pjd-rows 1 --out ${WORK}/pjd1.png --stats ${WORK}/pjd1.json --quiet)
file(READ "${WORK}/pjd1.json" js)
string(JSON toks_pjd1 GET "${js}" tokens)
if(NOT toks_pjd1 STREQUAL toks_ar)
  message(FATAL_ERROR "greedy one-row PJD tokens differ from AR:\n${toks_pjd1}\n${toks_ar}")
endif()
run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 5 --temperature 1
       --method pjd --pjd-rows 1 --verify coupled --out ${WORK}/pjd1c.png --stats ${WORK}/pjd1c.json
       --quiet)
file(READ "${WORK}/pjd1c.json" js)
string(JSON t1_pjd1 GET "${js}" tokens)
if(NOT t1_pjd1 STREQUAL t1_ar)
  message(FATAL_ERROR "coupled one-row PJD tokens at T = 1 differ from AR:\n${t1_pjd1}\n${t1_ar}")
endif()
foreach(run "pjd;--method;pjd;--pjd-row-offset;2" "cascade;--method;adt;--relax;cascade")
  list(POP_FRONT run name)
  run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 2 ${run}
         --out ${WORK}/${name}.png --stats ${WORK}/${name}.json --quiet)
  file(READ "${WORK}/${name}.json" js)
  string(JSON lossless GET "${js}" settings lossless)
  if(lossless)
    message(FATAL_ERROR "${name} with its relaxation on calls itself lossless")
  endif()
endforeach()
# Settings inside the PNG: --from-png makes the same picture again; --no-metadata leaves them out;
# a tool the project did not write reads them (ImageMagick, when installed).
run_ok(${ADTREE} generate --from-png ${WORK}/t1-adt.png --out ${WORK}/again.png
       --stats ${WORK}/again.json --quiet)
file(READ "${WORK}/again.json" js)
string(JSON again_tokens GET "${js}" tokens)
string(JSON again_method GET "${js}" settings method)
if(NOT again_tokens STREQUAL t1_adt OR NOT again_method STREQUAL "adt")
  message(FATAL_ERROR "--from-png did not make the same picture (${again_method})")
endif()
find_program(IDENTIFY identify)
if(IDENTIFY)
  execute_process(COMMAND ${IDENTIFY} -verbose ${WORK}/t1-adt.png OUTPUT_VARIABLE id_out)
  if(NOT id_out MATCHES "adtree-settings: {\"app\":\"adtree")
    message(FATAL_ERROR "identify -verbose does not show the PNG's adtree-settings")
  endif()
endif()
# The model's hash travels with the picture (stats and PNG), so a picture names its weights.
string(JSON again_hash GET "${js}" settings model_hash)
if(IDENTIFY AND NOT id_out MATCHES "\"hash\":\"${again_hash}\"")
  message(FATAL_ERROR "the PNG's settings do not carry the model hash ${again_hash}")
endif()
# --count N: N pictures with consecutive seeds, numbered by seed; seed 5 of the batch is the
# picture --seed 5 makes alone.
run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 4 --count 3
       --method adt --temperature 1 --out ${WORK}/batch.png --stats ${WORK}/batch.json --quiet)
foreach(s 4 5 6)
  if(NOT EXISTS "${WORK}/batch-${s}.png" OR NOT EXISTS "${WORK}/batch-${s}.json")
    message(FATAL_ERROR "--count 3 did not write batch-${s}.png and batch-${s}.json")
  endif()
endforeach()
file(READ "${WORK}/batch-5.json" js)
string(JSON batch_tokens GET "${js}" tokens)
if(NOT batch_tokens STREQUAL t1_adt)
  message(FATAL_ERROR "the batch's seed 5 is not the picture seed 5 makes alone")
endif()
run_fails("--count must be in 1..10000" ${ADTREE} generate --model ${WORK}/model --prompt cat --count 0)
run_ok(${ADTREE} generate --model ${WORK}/model --prompt cat --out ${WORK}/plain.png --no-metadata --quiet)
run_fails("carries no adtree settings" ${ADTREE} generate --from-png ${WORK}/plain.png --out ${WORK}/x.png)
run_fails("cannot read the PNG" ${ADTREE} generate --from-png ${WORK}/none.png --out ${WORK}/x.png)
# --trace: every step's tree and distributions go into the statistics (what the studio opens).
run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --seed 1 --method adt
       --out ${WORK}/traced.png --stats ${WORK}/traced.json --trace --quiet)
file(READ "${WORK}/traced.json" js)
string(JSON n_steps LENGTH "${js}" steps)
string(JSON n_traces LENGTH "${js}" traces)
if(NOT n_steps EQUAL n_traces)
  message(FATAL_ERROR "--trace wrote ${n_traces} traces for ${n_steps} steps")
endif()
string(JSON adt_rule GET "${js}" traces 1 adt rule)
string(JSON n_top LENGTH "${js}" traces 1 cells 0 top_tokens)
if(NOT adt_rule MATCHES "alpha" OR n_top LESS 2)
  message(FATAL_ERROR "the trace of step 1 lacks its ADT rule or distribution: ${adt_rule} ${n_top}")
endif()
string(JSON has_traces ERROR_VARIABLE no_traces GET "${stats}" traces)
if(NOT no_traces)
  message(FATAL_ERROR "statistics without --trace carry traces")
endif()
# adtree sweep: two shards merged hold every (setting, prompt, seed) row once.
foreach(i 0 1)
  run_ok(${ADTREE} sweep --model ${WORK}/model --method adt,ar --temperatures 0,1 --seeds 2
         --prompts "a red cat" --budget 8 --shard ${i}/2 --out ${WORK}/shard${i}.jsonl)
endforeach()
run_ok(${ADTREE} sweep merge --inputs ${WORK}/shard0.jsonl,${WORK}/shard1.jsonl
       --out ${WORK}/sweep.jsonl --summary ${WORK}/sweep.md)
file(STRINGS "${WORK}/sweep.jsonl" sweep_rows)
list(LENGTH sweep_rows n_rows)
if(NOT n_rows EQUAL 8)
  message(FATAL_ERROR "merged sweep has ${n_rows} rows, expected 8 (2 methods x 2 T x 2 seeds)")
endif()
file(READ "${WORK}/sweep.md" sweep_md)
if(NOT sweep_md MATCHES "adt T=0")
  message(FATAL_ERROR "the sweep summary lacks its settings:\n${sweep_md}")
endif()
run_fails("--shard i/n needs 0 <= i < n" ${ADTREE} sweep --model ${WORK}/model --shard 2/2
          --out ${WORK}/x.jsonl)
run_fails("--betas: --adt-beta must be a number, not 'high'" ${ADTREE} sweep --model ${WORK}/model
          --betas 0.5,high --out ${WORK}/x.jsonl)
run_fails("--budgets: invalid method setting: dynamic_tree.budget (--budget) must be in 0..4096, got -1" ${ADTREE} sweep
          --model ${WORK}/model --method dynamic --budgets -1,8 --dry-run)
run_fails("--pjd-offsets: invalid method setting: pjd.row_offset (--pjd-row-offset) must be in 1.., got 0"
          ${ADTREE} sweep --model ${WORK}/model --method pjd --pjd-offsets 0,2 --dry-run)
# The settings table's axes split only the methods that read them: adt x 2 betas, pjd x 2 offsets.
execute_process(COMMAND ${ADTREE} sweep --model ${WORK}/model --method adt,pjd,ar --betas 0.25,0.75
                        --pjd-offsets 2,8 --dry-run
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "5 setting" OR NOT out MATCHES "adt beta=0.25"
   OR NOT out MATCHES "pjd offset=8")
  message(FATAL_ERROR "sweep axes from the settings table:\n${out}\n${err}")
endif()
run_fails("--trace needs --stats" ${ADTREE} generate --model ${WORK}/model --prompt cat --trace
          --out ${WORK}/x.png)
run_ok(${ADTREE} generate --model ${WORK}/model --prompt "a red cat" --method static --relax lantern
       --lantern-k 8 --out ${WORK}/lantern.png --quiet)
run_ok(${ADTREE} bench --model ${WORK}/model --method ar,adt --prompts "a red cat" --seeds 1
       --rounds 2 --blocks 1,2 --reps 1 --budget 4 --json ${WORK}/bench.json)
file(READ "${WORK}/bench.json" bj)
string(JSON speedup GET "${bj}" summary adt speedup_vs_ar)
# Methods taken in turn per picture, the set twice: AR, adt, AR, adt; each method ran twice.
string(JSON bench_runs LENGTH "${bj}" runs)
string(JSON second GET "${bj}" runs 1 method)
string(JSON third GET "${bj}" runs 2 round)
string(JSON adt_runs GET "${bj}" summary adt runs)
if(NOT bench_runs EQUAL 4 OR NOT second STREQUAL "adt" OR NOT third EQUAL 1 OR NOT adt_runs EQUAL 2)
  message(FATAL_ERROR "bench order: ${bench_runs} runs, second ${second}, third's round ${third}")
endif()
run_fails("--seeds and --rounds need at least 1" ${ADTREE} bench --model ${WORK}/model --rounds 0)
# A bench entry with method settings of its own (an ablation in one run).
run_ok(${ADTREE} bench --model ${WORK}/model --method "adt@adt-grid-tree=off@adt-leftover=0"
       --prompts "a red cat" --seeds 1 --rounds 1 --blocks 1 --reps 1 --budget 4
       --json ${WORK}/bench-at.json)
file(READ "${WORK}/bench-at.json" bj)
string(JSON at_runs GET "${bj}" summary "adt@adt-grid-tree=off@adt-leftover=0" runs)
if(NOT at_runs EQUAL 1)
  message(FATAL_ERROR "bench entry with settings: ${at_runs} runs")
endif()
# The default blocks on a model smaller than the largest of them: those that fit are timed.
run_ok(${ADTREE} bench --model ${WORK}/model --method ar --seeds 1 --rounds 1 --reps 1)
run_fails("'@adt-nothing=1': give a method setting as FLAG=VALUE" ${ADTREE} bench --model
          ${WORK}/model --method "adt@adt-nothing=1" --seeds 1 --rounds 1)
run_fails("--adt-leftover" ${ADTREE} bench --model ${WORK}/model --method "adt@adt-leftover=lots"
          --seeds 1 --rounds 1)
# bench-picture: the whole picture both ways, each split into its phases, and the load.
run_ok(${ADTREE} bench-picture --model ${WORK}/model --prompts "a red cat" --seeds 2 --previews 1
       --json ${WORK}/picture.json)
file(READ "${WORK}/picture.json" pj)
string(JSON pictures LENGTH "${pj}" pictures)
string(JSON last_way GET "${pj}" pictures 3 path)
string(JSON engine_decode GET "${pj}" pictures 3 final_decode_ms)
string(JSON cli_tokens GET "${pj}" summary cli tokens_ms)
string(JSON load_ms GET "${pj}" load ms)
string(JSON ratio GET "${pj}" summary engine_over_cli)
if(NOT pictures EQUAL 4 OR NOT last_way STREQUAL "engine" OR NOT engine_decode GREATER 0
   OR NOT cli_tokens GREATER 0 OR NOT load_ms GREATER 0 OR NOT ratio GREATER 0)
  message(FATAL_ERROR "bench-picture: ${pj}")
endif()
run_fails("--ways must name cli, engine or both" ${ADTREE} bench-picture --model ${WORK}/model --ways none)
run_fails("--vq-dtype must be auto, fp32 or bf16, not 'fp8'" ${ADTREE} generate --model ${WORK}/model --prompt cat
          --vq-dtype fp8 --out ${WORK}/fp8.png)
foreach(p fp32 bf16)
  run_ok(${ADTREE} generate --model ${WORK}/model --prompt cat --vq-dtype ${p} --out ${WORK}/vq-${p}.png --quiet)
endforeach()
run_fails("--vq must be small or llamagen, got 'huge'" ${ADTREE} model random --config micro --vq huge
          --out ${WORK}/vq-huge)
run_ok(${ADTREE} info --model ${WORK}/model)
run_ok(${ADTREE} generate --help)

run_fails("unknown option '--bogus'" ${ADTREE} generate --model ${WORK}/model --prompt cat --bogus 1)
run_fails("unknown prompt word(s): 'zebra'" ${ADTREE} generate --model ${WORK}/model --prompt zebra)
run_fails("--temperature must be a number, not 'hot'" ${ADTREE} generate --model ${WORK}/model --prompt cat --temperature hot)
run_fails("option '--seed' must not be negative, got -5" ${ADTREE} generate --model ${WORK}/model --prompt cat --seed -5)
run_fails("--temperature must be a number, not 'inf'" ${ADTREE} generate --model ${WORK}/model --prompt cat --temperature inf)
run_fails("invalid sampling setting: temperature (--temperature) must be >= 0, got -1" ${ADTREE} generate --model ${WORK}/model --prompt cat --temperature -1)
run_fails("the prompt has no words" ${ADTREE} generate --model ${WORK}/model --prompt " ")
run_fails("invalid sampling setting: top_k (--top-k) must be in 0.." ${ADTREE} generate --model ${WORK}/model --prompt cat --top-k 999)
run_fails("does not exist" ${ADTREE} generate --model ${WORK}/none --prompt cat)
run_fails("unknown command" ${ADTREE} frobnicate)
run_fails("--dtype must be fp32, bf16 or fp16, not 'fp8'" ${ADTREE} generate --model ${WORK}/model --prompt cat --dtype fp8)
run_fails("unknown method 'magic'" ${ADTREE} generate --model ${WORK}/model --prompt cat --method magic)
run_fails("dynamic_tree.depth (--depth) must be in 1..64, got 0" ${ADTREE} generate --model ${WORK}/model --prompt cat --method dynamic --depth 0)
run_fails("dynamic_tree.width (--width) must be in 1..32, got 99" ${ADTREE} generate --model ${WORK}/model --prompt cat --method dynamic --width 99)
run_fails("larger than the tree can hold" ${ADTREE} generate --model ${WORK}/model --prompt cat --method dynamic --budget 1000)
run_fails("lantern.delta (--lantern-delta) must be in [0, 1], got -1" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --relax lantern --lantern-k 4 --lantern-delta -1)
run_fails("ADT-Tree chooses (d, k) per step" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --depth 6)
run_fails("adt.leftover (--adt-leftover) must be in [0, 1], got 2" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --adt-leftover 2)
run_fails("--verify must be auto, coupled, sampled, deterministic or maximal, not 'gumbel'" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --verify gumbel)
run_fails("applies to sjd, pathspec and sjd-pac" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --verify maximal)
run_fails("LANTERN relaxes" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --verify coupled --relax lantern --lantern-k 4)
run_fails("--relax must be lossless, lantern or cascade" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --relax fuzzy)
run_fails("--cascade-scope must be siblings or level" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --relax cascade --cascade-scope cousins)
run_fails("CASCADE relaxes the acceptance of draft trees" ${ADTREE} generate --model ${WORK}/model --prompt cat --method sjd --relax cascade)
run_fails("CASCADE lowers q(x)" ${ADTREE} generate --model ${WORK}/model --prompt cat --method adt --relax cascade --verify coupled)
run_fails("pjd.window (--pjd-window) must be in 1..64, got 0" ${ADTREE} generate --model ${WORK}/model --prompt cat --method pjd --pjd-window 0)
run_fails("--pjd-mask must be row-causal or causal" ${ADTREE} generate --model ${WORK}/model --prompt cat --method pjd --pjd-mask diagonal)

# Outputs that cannot be written: a full disk (/dev/full behind a link), a missing folder, a name
# without an image extension. Each is an error naming the file, not a silent truncated file.
file(CREATE_LINK /dev/full ${WORK}/full.png SYMBOLIC)
file(CREATE_LINK /dev/full ${WORK}/full.json SYMBOLIC)
run_fails("full.png: cannot write the image (flush: No space left on device)"
          ${ADTREE} generate --model ${WORK}/model --prompt cat --out ${WORK}/full.png)
run_fails("full.json: cannot write the statistics file"
          ${ADTREE} generate --model ${WORK}/model --prompt cat --out ${WORK}/ok.png --stats ${WORK}/full.json)
run_fails("full.json: cannot write the results"
          ${ADTREE} bench --model ${WORK}/model --seeds 1 --blocks 1 --reps 1 --json ${WORK}/full.json)
run_fails("cannot write the image (open: No such file or directory)"
          ${ADTREE} generate --model ${WORK}/model --prompt cat --out ${WORK}/no/such/dir/x.png)
run_fails("give the file an extension"
          ${ADTREE} generate --model ${WORK}/model --prompt cat --out ${WORK}/noext)
run_fails("--runs and --every must be positive" ${ADTREE} soak --model ${WORK}/model --runs 0)
run_ok(${ADTREE} soak --model ${WORK}/model --runs 12 --every 6 --warmup 6 --json ${WORK}/soak.json)
file(READ "${WORK}/soak.json" sj)
string(JSON sfailed GET "${sj}" failed)
if(NOT sfailed EQUAL 0)
  message(FATAL_ERROR "soak had failed jobs: ${sj}")
endif()

# adtree convert (docs/llamagen.md): a class-conditional model's weights, as a LlamaGen state dict
# in safetensors, come back as a model directory that generates from a class name or number.
run_ok(${ADTREE} model random --config micro --cond class --out ${WORK}/c2i --seed 4)
set(names "")
foreach(i RANGE 99)
  list(APPEND names "\"class ${i}, synonym ${i}\"")
endforeach()
list(JOIN names "," names)
file(WRITE ${WORK}/classes.json "{\"classes\": [${names}]}")
execute_process(COMMAND ${ADTREE} convert --gpt ${WORK}/c2i/gpt.safetensors
                --vq ${WORK}/c2i/vq.safetensors --n-head 2 --grid 4 --classes ${WORK}/classes.json
                --out ${WORK}/converted RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "convert failed:\n${out}\n${err}")
endif()
# Not a terminal here: no progress line (its carriage returns and ESC[K) in the output.
string(FIND "${err}${out}" "\r" cr)
if(NOT cr EQUAL -1)
  message(FATAL_ERROR "a progress line went to a pipe:\n${err}")
endif()
run_ok(${ADTREE} generate --model ${WORK}/converted --prompt "synonym 42" --out ${WORK}/c42.png --quiet)
run_ok(${ADTREE} generate --model ${WORK}/converted --class 42 --out ${WORK}/c42b.png --quiet)
run_fails("heads" ${ADTREE} convert --gpt ${WORK}/c2i/gpt.safetensors --grid 4
          --classes ${WORK}/classes.json --out ${WORK}/converted2)
run_fails("exists and is not empty" ${ADTREE} convert --gpt ${WORK}/c2i/gpt.safetensors --n-head 2
          --grid 4 --classes ${WORK}/classes.json --out ${WORK}/converted)
run_fails("no tensor 'tok_embeddings.weight'" ${ADTREE} convert --gpt ${WORK}/c2i/vq.safetensors
          --n-head 2 --grid 4 --out ${WORK}/converted3)
run_fails("unknown class 'zebra'" ${ADTREE} generate --model ${WORK}/converted --prompt zebra
          --out ${WORK}/z.png)

# A LlamaGen t2i-shaped model with the tiny random T5 that `model random --cond t5` writes beside it
# (docs/llamagen.md): typed prompts are encoded in C++, the run says so, and its stats record it.
run_ok(${ADTREE} model random --config micro --cond t5 --out ${WORK}/t2i --seed 5)
execute_process(COMMAND ${ADTREE} generate --model ${WORK}/t2i --prompt "A red cat" --seed 1
                --out ${WORK}/t2i.png --stats ${WORK}/t2i.json
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${out}" "prompt encoded by T5" pos)
if(NOT rc EQUAL 0 OR pos EQUAL -1)
  message(FATAL_ERROR "generate on a T5 model: rc ${rc}\n${out}\n${err}")
endif()
file(READ "${WORK}/t2i.json" stats)
string(JSON n GET "${stats}" settings prompt_tokens)
if(n LESS 2)
  message(FATAL_ERROR "t2i.json records ${n} prompt tokens")
endif()
set(long "")
foreach(i RANGE 12)
  string(APPEND long "the happy yellow star ")
endforeach()
execute_process(COMMAND ${ADTREE} generate --model ${WORK}/t2i --t5 ${WORK}/t2i/t5 --prompt "${long}"
                --out ${WORK}/t2i-long.png --quiet
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "T5 pieces past them were dropped" pos)
if(NOT rc EQUAL 0 OR pos EQUAL -1)
  message(FATAL_ERROR "a long prompt: rc ${rc}, expected the truncation warning\n${err}")
endif()
# adtree embed writes the caption-embedding file of the same caption: it gives the same picture as
# the typed prompt, greedy and with coupled ADT-Tree (PNGs without settings: pixels only).
run_ok(${ADTREE} embed --t5 ${WORK}/t2i/t5 --prompt "A red cat" --max-length 16
       --out ${WORK}/red-cat.safetensors)
foreach(mode "--temperature;0" "--method;adt")
  run_ok(${ADTREE} generate --model ${WORK}/t2i --prompt "A red cat" ${mode} --seed 2 --no-metadata
         --out ${WORK}/typed.png --quiet)
  run_ok(${ADTREE} generate --model ${WORK}/t2i --prompt ${WORK}/red-cat.safetensors ${mode} --seed 2
         --no-metadata --out ${WORK}/file.png --quiet)
  file(SHA256 ${WORK}/typed.png typed)
  file(SHA256 ${WORK}/file.png from_file)
  if(NOT typed STREQUAL from_file)
    message(FATAL_ERROR "${mode}: the typed prompt and its embedding file made different pictures")
  endif()
endforeach()
run_fails("not a T5 directory" ${ADTREE} embed --t5 ${WORK}/none --prompt "a cat" --out ${WORK}/x.st)
run_fails("a T5 text encoder is for LlamaGen t2i" ${ADTREE} generate --model ${WORK}/model
          --t5 ${WORK}/t2i/t5 --prompt "a red cat" --out ${WORK}/no.png)
run_fails("spiece.model" ${ADTREE} generate --model ${WORK}/t2i --t5 ${WORK}/model --prompt "a cat"
          --out ${WORK}/no.png)

# The continuous family through the same verbs: a random continuous model, a CSpD picture with its
# statistics, the bench's JSON, and the methods and settings it refuses by name.
run_ok(${ADTREE} model random --family continuous --out ${WORK}/continuous --seed 2)
run_ok(${ADTREE} generate --model ${WORK}/continuous --prompt "w1 w2" --method cspd --cspd-gamma 3
       --out ${WORK}/cont.png --stats ${WORK}/cont.json --quiet)
file(READ "${WORK}/cont.json" cont)
string(JSON n GET "${cont}" stats summary tokens)
string(JSON method GET "${cont}" method)
if(NOT n EQUAL 16 OR NOT method STREQUAL "cspd")
  message(FATAL_ERROR "the continuous run's statistics say ${n} tokens by ${method}")
endif()
# Two CSpD settings against one AR in one run: an entry's own settings after '@'.
run_ok(${ADTREE} bench --model ${WORK}/continuous --method "ar,cspd,cspd@cspd-gamma=2"
       --prompts "w1 w2" --seeds 1 --json ${WORK}/cont-bench.json)
file(READ "${WORK}/cont-bench.json" bench)
string(JSON speedup GET "${bench}" summary 1 speedup_vs_ar)
if(NOT speedup GREATER 0)
  message(FATAL_ERROR "the continuous bench reports no speed-up figure")
endif()
string(JSON entry GET "${bench}" summary 2 method)
string(JSON gamma GET "${bench}" summary 2 cspd gamma)
string(JSON positions LENGTH "${bench}" summary 2 acceptance_by_position)
if(NOT entry STREQUAL "cspd@cspd-gamma=2" OR NOT gamma EQUAL 2 OR NOT positions EQUAL 2)
  message(FATAL_ERROR "the bench's third entry is '${entry}' with gamma ${gamma}, ${positions} "
                      "positions' acceptance")
endif()
run_fails("give a method setting as FLAG=VALUE" ${ADTREE} bench --model ${WORK}/continuous
          --method "ar,cspd@gamma=2" --prompts "w1" --seeds 1)
run_fails("no :RULE" ${ADTREE} bench --model ${WORK}/continuous --method "ar,cspd:coupled"
          --prompts "w1" --seeds 1)
run_fails("runs on VQ codes" ${ADTREE} generate --model ${WORK}/continuous --prompt "w1"
          --method adt --out ${WORK}/no.png)
run_fails("temperature must be above 0" ${ADTREE} generate --model ${WORK}/continuous
          --prompt "w1" --temperature 0 --out ${WORK}/no.png)
run_fails("runs on continuous-token models" ${ADTREE} generate --model ${WORK}/model
          --prompt "a red cat" --method cspd --out ${WORK}/no.png)
run_fails("--family must be llamagen, continuous or mar" ${ADTREE} model random --family gpt
          --out ${WORK}/no)
run_fails("--head-variance is read by models whose tokens are vectors" ${ADTREE} generate
          --model ${WORK}/model --prompt "a red cat" --head-variance fixed --out ${WORK}/no.png)
run_ok(${ADTREE} generate --model ${WORK}/continuous --prompt "w1 w2" --method cspd
       --head-variance fixed --cspd-inner-temperature 42 --out ${WORK}/cont-fixed.png --quiet)

# MAR (issue "MAR checkpoints") through the same verbs: a random MAR-tiny with a draft, AR and CSpD
# pictures in MAR's random order (the statistics list each step's cells), bf16, the bench, and
# what a MAR model refuses by name.
run_ok(${ADTREE} model random --family mar --config tiny --draft tiny --out ${WORK}/mar --seed 4)
foreach(method ar cspd)
  run_ok(${ADTREE} generate --model ${WORK}/mar --class 3 --method ${method} --num-iter 8 --cfg 2
         --cfg-schedule linear --out ${WORK}/mar-${method}.png --stats ${WORK}/mar-${method}.json
         --quiet)
  file(READ "${WORK}/mar-${method}.json" marj)
  string(JSON n GET "${marj}" stats summary tokens)
  string(JSON fam GET "${marj}" family)
  string(JSON cells LENGTH "${marj}" stats steps 0 cells)
  if(NOT n EQUAL 16 OR NOT fam STREQUAL "mar" OR cells LESS 1)
    message(FATAL_ERROR "the MAR ${method} run says ${n} tokens, family ${fam}, ${cells} cells")
  endif()
endforeach()
run_ok(${ADTREE} generate --model ${WORK}/mar --class "3" --dtype bf16 --out ${WORK}/mar-bf16.png
       --quiet)
run_ok(${ADTREE} bench --model ${WORK}/mar --method "ar,cspd@cspd-gamma=2" --seeds 1
       --json ${WORK}/mar-bench.json)
file(READ "${WORK}/mar-bench.json" marb)
string(JSON fam GET "${marb}" family)
if(NOT fam STREQUAL "mar")
  message(FATAL_ERROR "the MAR bench says family '${fam}'")
endif()
run_fails("num_iter is at most the 16 image tokens" ${ADTREE} generate --model ${WORK}/mar
          --class 3 --num-iter 17 --out ${WORK}/no.png)
run_fails("unknown class" ${ADTREE} generate --model ${WORK}/mar --class "no such thing"
          --out ${WORK}/no.png)
run_fails("runs in fp32 or bf16 on the CPU" ${ADTREE} generate --model ${WORK}/mar --class 3
          --dtype fp16 --out ${WORK}/no.png)
run_fails("--num-iter is MAR's masking schedule" ${ADTREE} generate --model ${WORK}/continuous
          --prompt "w1" --num-iter 4 --out ${WORK}/no.png)
