// The size report printed by every build, and its budgets (the build fails over them):
//   first view   what the calculator needs to show its numbers and take input: index.html (numbers
//                prerendered, the page's styles inside), main.js. ≤ 50 KiB gzipped (DESIGN.md, issue 11).
//   calculator   everything it loads, the core's worker and wasm included. ≤ 388 KiB gzipped (385 until the
//                twenty-second Dec 6 2026 session, when DistilBERT's reader and preset, the encoders' fp32 adapter
//                copies without autocast and decoders' classification heads (the score, its step, the task class
//                read from architectures, PEFT's copy of a classifier, the token classifier's dropout, the adapters suggested to a classifier keeping its head, dots.llm1's and Hunyuan's readers and the review's mends (class padding defaults, wrapper task keys, the token head's dropout by class) brought it to 387.3; 379 until the
//                twenty-first Dec 6 2026 session, when Mistral 4's, GLM-4.7-Flash's and MiniMax-M2's readers
//                (DeepSeek-V3's block under their routers, Mixtral's under FlexOlmo's attention, their classes'
//                defaults, mlp_layer_types, rotary_dim) and their three presets, the class defaults every
//                reader now gives a key a file leaves out (key/value heads, head_dim, DeepSeek's mixture, the
//                wrappers' head tying), the refusals' reasons for families not described yet and PaliGemma's
//                SigLIP tower and projector, and attention_bias and mlp_bias read only where the class has them, a wrapper's default text model, Phi-3.5-MoE's reader with its sparsemixer and the mixtures' input jitter (model.moe_input_jitter), brought it to 383.7; 374 until the
//                twentieth Dec 6 2026 session, when images through the plain-ViT towers (Gemma 3's SigLIP,
//                LLaVA's CLIP, SigLIP and Pixtral, Mistral 3's Pixtral: their terms by encoder, projector, trained
//                parts, checkpointing and precision as tables, two model fields, the checks and their messages)
//                brought it to 378.5; 367 until the
//                nineteenth Dec 6 2026 session, when a full fine-tune training a vision tower's projector, encoder
//                or both (training.finetune.train_vision: the tower's parts among the trained parameters, its
//                autocast copies, checks, note and suggestion), LLaVA over SigLIP and Pixtral
//                (model.vision_encoder), Qwen3-VL-MoE, the wrappers' own head-tying rules, the tokens an image
//                adds, and images through a Qwen-VL tower (training.images_per_sample and image_patches: their
//                terms by tower, trained parts, checkpointing and precision, the checks and the note) brought it
//                to 373.5; 358 until the
//                eighteenth Dec 6 2026 session, when a multimodal model's vision tower held frozen with the
//                weights (thirteen model fields and where each applies, the towers of Qwen2-VL, Qwen2.5-VL,
//                Qwen3-VL, Gemma 3, LLaVA and Mistral 3 counted as transformers' classes build them, their
//                bytes under every base dtype, ZeRO and offload, the importer reading each class's keys and
//                defaults, the checks and a note) brought it to 365.9; 356 until the
//                seventeenth Dec 6 2026 session, when the model's class knobs resolved from model_type,
//                Liger's per-model-type patches with the multimodal wrapper's type, and the fp32 results of
//                DoRA, IA3 and RoAd over a 4-bit base with the encoders' QLoRA brought it to 356.3; 353 until the
//                sixteenth Dec 5 2026 session, when OLMo-1's, Arcee's, Nemotron's and Apertus's readers with the
//                weightless LayerNorm, clip_qkv's clamps, squared ReLU, xIELU and the LayerNorm run in the autocast
//                dtype (two model fields, a norm kernel and their words) and the Qwen-VL vision towers' counts
//                for the importer's warning brought it to 355.5; 347 until the
//                fourteenth Dec 5 2026 session, when what PEFT's layers make for a moment (DoRA's weight
//                norm, the pieces of the other methods' dense updates and their gradients, and under
//                checkpointing what a layer would have saved: a high point inside a block's forward, in
//                its recomputation and in its backward, in the phases and in the allocator's replay)
//                brought it to 351.9; 344 until the
//                thirteenth Dec 5 2026 session, when PEFT's GPU benchmark of every method brought what it
//                showed into the core (the memory held between steps, a kept key/value cache, the fp32 that
//                fifteen methods build from their adapters on a 16-bit model and what stays fp32 under
//                autocast, where BOFT's, FRoD's and PSOFT's buffers live, AdaLoRA's rank allocator) and it
//                reached 346.0; 332 until the tenth
//                Dec 5 2026 session, when Qwen3.5's and Qwen3-Next's hybrid layers (a Gated DeltaNet mixer beside
//                gated attention, its reader, its saved tensors and backward, the two kinds' blocks kept apart, the
//                engines and PEFT methods that cannot run it refused, four presets, transformers' torch fallback for it)
//                brought it to 342.9; 326 until the ninth
//                Dec 5 2026 session, when five model families (GLM-4.5's, OLMoE's, ERNIE 4.5's dense and MoE
//                readers, Llama 4's with its every-expert dispatch and fp32 L2 query/key norm) and the weight
//                casts that follow the experts' dispatch, with three presets (Llama 4 Scout, OLMoE,
//                GLM-4.5-Air), brought it to 329.7, and the review's limits (expert parallelism and
//                FlashAttention refused for Llama 4, interleaved layers under a pipeline, LoRA on its expert
//                stacks, no_rope_layers read strictly, hybrid families named as such) to 331.5; 325 until the eighth
//                Dec 5 2026 session, when accelerate's FSDP upcast under mixed precision (trained 16-bit tensors held
//                in fp32, a unit mixing frozen and trained weights cast whole, FSDP1 refusing fp32 adapters beside a
//                16-bit base) brought it to 325.4; 323 until the Dec 5 2026
//                session, when the 4-bit storage dtype (training.finetune.quant_storage: accelerate's FSDP2 leaving
//                uint8 4-bit weights whole, FSDP1 refusing them, its suggestion) and FSDP1's options applying only
//                under FSDP1 (the schema's any_of) brought it to 323.3, and the Trainer's FSDP1 units (adapters apart) with the review that followed to 324.3, and the 4-bit quantisation state kept whole under sharding to 324.6; 321 until later in the sixth Dec 4
//                2026 session, when torchtitan's async-TP workspace (parallel.async_tp: field, check, note) brought it
//                to 321.7 with the review that followed; 319 until the sixth Dec 4
//                2026 session, when parallel.fsdp_version (FSDP1 or FSDP2 under any torch stack, with accelerate's
//                carved FSDP2 root units, the accelerate export's two forms and the FSDP2 suggestion) brought it to 320.9; 318 until later in the
//                fifth Dec 4 2026 session, when LitGPT's quantised head (stored in 4 bits, dequantised for each
//                matmul), bitsandbytes' paging threshold for optimizer states and the blocks' dequantised weights in
//                backward brought it to 318.9; 316 until the
//                fifth Dec 4 2026 session, when fourteen model presets (Qwen3 0.6B to 32B and 235B-A22B,
//                Qwen2.5 1.5B to 72B, Gemma 3 1B, Phi-4: each the config.json keys the importer reads, its
//                name, source and published count) brought it to 316.7; 315 until the
//                fourth Dec 4 2026 session, when eight data-centre cards (H20, GH200 96 / 144 GB, H200 NVL,
//                L20, B300, MI355X, GB200: each a row of names, figures and sources in the wasm) brought it
//                to 315.3; 311 until the third Dec 4 2026 session, when the replay's recomputed blocks as their own tensors, FSDP1's
//                flat parameters (one shard per unit, the optimizer's views of it) and FSDP's whole block
//                gradients in backward (with FSDP2's reduce-scatter input), FSDP2's gradients on its
//                reduce-scatter stream and DeepSpeed's flat optimizer partitions brought it to 314.4; 310 until the
//                second Dec 4 2026 session, when the allocator replay's third stream pool (FSDP1's gradient
//                shards), NCCL's communicators and the card-bounded replay brought it to 310.6; 277 until the
//                fifth Dec 3 2026 session, when the calculator's wasm was built for speed as the planner's is,
//                -O3 over memfit_core_fast, wasm/CMakeLists.txt: an estimate 3x and the suggestions 3.5x faster
//                in node, for 32 KB more of wasm, 306.9 KiB in all; 276 until the
//                fourth Dec 3 2026 session, when old bitsandbytes' kept inputs under non-reentrant
//                checkpointing and its two suggestions, DeepSpeed's offloaded gradients, Liger's head
//                gradient dtype and the embed forms' static-data reader brought it to 276.02; 272 until the
//                third Dec 3 2026 session, when FSDP1's frozen units under reentrant checkpointing
//                (training.checkpoint_impl), GPTBigCode's cache, a quantised base gathered at its stored
//                size and suggestions worked out on a card's own precision brought it to 274.3; 264 until Dec 3 2026, when LoRA / QLoRA on stacked experts and TRL's chunked loss brought it to 263.7;
//                256 until Dec 2026, when the config.json readers of seven more families brought it to 256.2; the core
//                grew with every PEFT method, the optimizers, the allocator replay, the
//                encoder-decoder models, the solvers, the step-time model and each framework
//                behaviour the accuracy work adds: about 175 KiB of wasm, 18 KiB of it strings; its
//                code is estimate()'s inlined tensor lists, not data; the planner's own module loads
//                only when the planner opens and is outside this total). It loads after the first view, which stays within its own 50 KiB).
//   planner      what opening the planner adds: its chunk (with its styles), its worker and its wasm
//                (memfit-planner.wasm: the core plus the layout search and the exports, built -O3
//                for the search's speed). ≤ 367 KiB gzipped (363 until the twenty-second Dec 6 2026 session, when DistilBERT's
//                reader and preset, its undropped attention branch (model.attention_output_dropout), the encoders'
//                fp32 adapter copies without autocast and decoders' classification heads (the score, its step, the
//                task class read from architectures, PEFT's copy of a classifier, the token classifier's dropout, the adapters suggested to a classifier keeping its head, dots.llm1's and Hunyuan's readers and the review's mends brought it to 366.0; 357 until the twenty-first Dec 6 2026 session, when the same
//                readers, presets, class defaults, reasons, tower, bias keys, default text models, Phi-3.5-MoE and the input jitter brought it to 362.3; 353 until the twentieth Dec 6 2026 session, when the
//                same images through the ViT towers brought it to 356.7; 345 until the nineteenth Dec 6 2026 session, when
//                the same trained vision towers, readers and images, placed by the planner's own fast path too, brought it to 352.2;
//                336 until the eighteenth Dec 6 2026 session, when
//                the same vision towers brought it to 344.6; 333 until the seventeenth Dec 6 2026 session, when
//                the model's transformers-class knobs resolved in the core from model_type (class_reference,
//                applied under every framework that runs the class), Liger's per-model-type patches
//                (liger_patches) and the same PEFT and encoder mechanisms as the calculator's brought it to 334.1; 331 until the sixteenth Dec 5 2026 session, when
//                the same OLMo-1, Arcee, Nemotron and Apertus readers and fields and the vision towers' counts brought it to 332.7; 330 until the fifteenth, when
//                the importer's vision-language wrappers (Qwen2-VL, Qwen2.5-VL and Qwen3-VL, InternVL's
//                llm_config, DeepSeek-VL2's language_config) and DeepSpeed's one-GPU communicator brought
//                it to 330.5; 326 until the fourteenth Dec 5 2026 session, when
//                the same PEFT temporaries brought it to 329.7; 324 until the thirteenth, when the
//                same PEFT benchmark's mechanisms, with LoKr's decompose_factor and IA3's feedforward
//                modules, brought it to 325.0; 323 until the twelfth, when the
//                eighteen PEFT methods PEFT 0.21.2 added, with their checks, ShadowPEFT's side network and the
//                reviews' fixes, brought it to 323.1 after peft.cpp was compiled for size (8.7 KB less); 310 until
//                the tenth Dec 5 2026 session, when the
//                same hybrid layers brought it to 322.2; 304 until the ninth Dec 5 2026 session, when the same
//                five families and presets brought it to 307.6, and the same review's limits to 309.5; 302 until the Dec 5 2026 session, when the same 4-bit
//                storage dtype brought it to 301.8, with the Trainer's FSDP1 units, the review and the whole quantisation state to 302.5; 300 until later in the sixth Dec 4 2026 session, when the
//                same async-TP workspace brought it to 300.7 with the review and the export notes; 298 until the sixth Dec 4 2026 session, when the same
//                FSDP version brought it to 299.8; 296 until the fifth Dec 4 2026 session, when the same
//                fourteen presets brought it to 296.1, and LitGPT's quantised head with bitsandbytes'
//                paging threshold and the blocks' dequantised weights to 297.9; 295 until the fourth Dec 4 2026 session, when eight
//                data-centre cards and the GB200's NVLink rack as one link domain brought it to 295.0;
//                292 until the third Dec 4 2026 session, when the same
//                mechanisms as the calculator's brought it to 294.0; 290 until the second Dec 4 2026 session, when NCCL's
//                communicator buffers, the replay bounded by the card for one shape (the streams' pools on one
//                card, FSDP1's post-backward pool a third), the notes on cudaMalloc retries and on a replay that
//                runs out on the card, and micro-batches padded to their longest sample brought it to 291.1;
//                289 until Dec 4 2026, when eight more cards, per-card
//                contexts in the GPU table, the gentler combined plan and the high-reserve note brought it to
//                289.4, after the GPU table became plain constant data (2.7 KiB less); 287 until the fifth Dec 3 2026 session, when the
//                suggestions' second plan (a full fine-tune kept one), min-gpus' half-count probe and the
//                larger card of the same maker brought it to 287.02; 286 until the fourth Dec 3 2026 session, when
//                the calculator's new mechanisms brought it to 286.01; 282 until the third Dec 3 2026 session, when
//                the same mechanisms and the planner's MFU in one decimal brought it to 284.9; 280 until the second Dec 3 2026
//                session, when plans were held to the layouts an engine memfit exports to runs,
//                checked through the exporters, and the exports gained what the engines check at
//                launch, and plans listed one per family, bringing it to 281.0; 272 until Dec 3 2026, when the same two
//                mechanisms brought it to 270.4; 256 until Dec 2026, when the core's
//                MX training and ZeRO++ brought it to 256.0: it carries every mechanism the
//                estimate models, as the calculator does); none of it is in the first view or the
//                calculator.
// Pages of their own (accuracy, the report, the embed forms) are listed, outside the budgets.
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

// main.js and the chunks it imports statically are the first view; the chunks it imports with
// import() at start (the details) and the core are the rest of the calculator; a chunk loaded only
// on demand (the Hugging Face import and its Hub client, the Embed dialog) is listed alone.
export const FIRST_VIEW = ['index.html', 'main.js'];  // index.html carries the page's styles (web/build.mjs)
export const CORE = ['worker.js', 'memfit.wasm'];
export const PLANNER_CORE = ['planner-worker.js', 'memfit-planner.wasm'];
const ON_DEMAND = /HfImport|EmbedDialog|Planner-|^chunks\/hub-/;
const PLANNER_CHUNK = /^chunks\/Planner-[^/]*\.js$/;

// The files a script imports: static (import … from) and dynamic (import()), relative to dist.
async function imports(dist, name) {
  const text = await readFile(join(dist, name), 'utf8');
  const base = name.includes('/') ? name.slice(0, name.lastIndexOf('/') + 1) : '';
  const rel = (spec) => join(base, spec).replace(/\\/g, '/');
  return {
    static: [...text.matchAll(/from\s*"(\.[^"]+)"/g)].map((m) => rel(m[1])),
    dynamic: [...text.matchAll(/import\(\s*"(\.[^"]+)"\s*\)/g)].map((m) => rel(m[1])),
  };
}
async function closure(dist, names, followDynamic) {
  const seen = new Set();
  const walk = async (n) => {
    if (seen.has(n)) return;
    seen.add(n);
    if (!n.endsWith('.js')) return;
    const i = await imports(dist, n);
    for (const s of i.static) await walk(s);
    if (followDynamic) for (const d of i.dynamic) if (!ON_DEMAND.test(d)) await walk(d);
  };
  for (const n of names) await walk(n);
  return [...seen];
}
export const BUDGET = { firstView: 50 * 1024, calculator: 388 * 1024, planner: 367 * 1024 };

export function sizes(data) {
  return {
    raw: data.length,
    gzip: gzipSync(data, { level: 9 }).length,
    brotli: brotliCompressSync(data, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
  };
}

const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;

export async function sizeReport(dist, { quiet = false } = {}) {
  const files = {};
  for (const name of (await readdir(dist, { recursive: true })).sort()) {
    try {
      files[name] = sizes(await readFile(join(dist, name)));
    } catch {
      // a folder
    }
  }
  const sum = (names) => names.reduce((t, n) => {
    const s = files[n] ?? { raw: 0, gzip: 0, brotli: 0 };
    return { raw: t.raw + s.raw, gzip: t.gzip + s.gzip, brotli: t.brotli + s.brotli };
  }, { raw: 0, gzip: 0, brotli: 0 });
  const firstViewFiles = await closure(dist, FIRST_VIEW, false);
  const calculatorFiles = await closure(dist, [...FIRST_VIEW, ...CORE], true);
  const plannerChunks = await closure(dist, Object.keys(files).filter((n) => PLANNER_CHUNK.test(n)), false);
  const plannerFiles = [...plannerChunks.filter((f) => !calculatorFiles.includes(f)), ...PLANNER_CORE];
  const firstView = sum(firstViewFiles);
  const calculator = sum(calculatorFiles);
  const planner = sum(plannerFiles);
  const row = (name, s, note = '') =>
    `  ${name.padEnd(24)} ${String(s.raw).padStart(9)} B   gzip ${String(s.gzip).padStart(7)} B   brotli ${String(s.brotli).padStart(7)} B${note}`;
  const lines = ['web/dist/'];
  for (const [name, s] of Object.entries(files)) lines.push(row(name, s));
  lines.push(row('first view', firstView, `   (${kib(firstView.gzip)} of ${kib(BUDGET.firstView)} gzipped: ${firstViewFiles.join(' + ')})`));
  lines.push(row('calculator', calculator, `   (${kib(calculator.gzip)} of ${kib(BUDGET.calculator)}: + ${calculatorFiles.filter((f) => !firstViewFiles.includes(f)).join(' + ')})`));
  lines.push(row('planner', planner, `   (${kib(planner.gzip)} of ${kib(BUDGET.planner)}, when it opens: ${plannerFiles.join(' + ')})`));
  if (!quiet) console.log(lines.join('\n'));
  const report = { files, firstView, firstViewFiles, calculator, calculatorFiles, planner, plannerFiles, budget: BUDGET };
  await writeFile(join(dist, '..', '..', 'build-web', 'size-report.json'), `${JSON.stringify(report, null, 1)}\n`).catch(() => {});
  let ok = true;
  if (firstView.gzip > BUDGET.firstView) {
    console.error(`the first view is ${kib(firstView.gzip)} gzipped, over its ${kib(BUDGET.firstView)} budget`);
    ok = false;
  }
  if (calculator.gzip > BUDGET.calculator) {
    console.error(`the calculator is ${kib(calculator.gzip)} gzipped, over its ${kib(BUDGET.calculator)} budget`);
    ok = false;
  }
  if (planner.gzip > BUDGET.planner) {
    console.error(`the planner is ${kib(planner.gzip)} gzipped, over its ${kib(BUDGET.planner)} budget`);
    ok = false;
  }
  return ok;
}
