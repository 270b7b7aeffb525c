// The answer first: the peak, what nvidia-smi would show, and the verdict on the chosen GPU.
import { ACCURACY_PAGE, count, medianAbsError } from '../../accuracy.js';
import { formatBytes, formatCount, formatExactBytes, formatPercent, share } from '../../format.js';
import { choiceWords } from '../../words.js';
import { Bytes } from './Bytes.jsx';
import { VerdictBadge } from './Verdict.jsx';

function Gauge({ fit, units }) {
  const need = share(fit.need_bytes, fit.memory_bytes);
  const over = fit.need_bytes > fit.memory_bytes;
  return (
    <div class="gauge" role="img" aria-label={`needs ${formatBytes(fit.need_bytes, units)} of ${formatBytes(fit.memory_bytes, units)}`}>
      <div class={`gauge-fill gauge-${fit.verdict}`} style={{ width: `${over ? 100 : need}%` }} />
      <div class="gauge-budget" style={{ left: `${fit.budget_fraction * 100}%` }} title={`budget: ${formatPercent(fit.budget_fraction)} of the card`} />
    </div>
  );
}

// Why a run is tight: its own estimate over the budget, or only the top of the band where published
// runs like it landed (fit.need_high_bytes: what nvidia-smi would show, times the band's top ratio,
// the same ratio as the top of the band under Peak allocated) over it, or over the whole card.
function TightWhy({ fit, units }) {
  const budget = formatPercent(fit.budget_fraction);
  if (fit.need_bytes > fit.budget_bytes || !(fit.need_high_bytes > fit.budget_bytes)) return <> · over the {budget} budget</>;
  const ratio = fit.need_high_bytes / fit.need_bytes;
  const past = fit.need_high_bytes > fit.memory_bytes ? 'more than the whole card' : `over the ${budget} budget`;
  return (
    <>
      {' '}· but 1 in 10 published runs like it measured {ratio.toFixed(2)}× memfit's estimate or more:
      {' '}<Bytes bytes={fit.need_high_bytes} units={units} /> on this card, {past}
    </>
  );
}

// A run that fits: what is left under the budget once the band's top is allowed for. The headroom
// is to the whole card; what more fits (a larger micro-batch) is judged against this.
function BudgetLeft({ fit, units }) {
  if (!(fit.budget_left_bytes >= 0)) return null;
  return (
    <>
      {' '}· <Bytes bytes={fit.budget_left_bytes} units={units} testid="budget-left" /> under the {formatPercent(fit.budget_fraction)} budget
      {fit.need_high_bytes > fit.need_bytes ? ', allowing for the spread of published runs' : ''}
    </>
  );
}

function Headroom({ fit, units }) {
  if (fit.headroom_bytes < 0) {
    return <>needs <Bytes bytes={-fit.headroom_bytes} units={units} /> more than the card's <Bytes bytes={fit.memory_bytes} units={units} /></>;
  }
  return (
    <>
      <Bytes bytes={fit.headroom_bytes} units={units} testid="headroom" /> headroom of <Bytes bytes={fit.memory_bytes} units={units} />
      {fit.verdict === 'tight' && <TightWhy fit={fit} units={units} />}
      {fit.verdict === 'fits' && <BudgetLeft fit={fit} units={units} />}
    </>
  );
}

// The core's band from published runs, when it gives one (result.measured_band_bytes): where 80 %
// of them landed relative to memfit's estimate of the same quantity (docs/accuracy.md), from the
// runs of this population (profile · method · GPU count) or, with too few of those, from all.
function MeasuredBand({ result, units }) {
  const band = result.measured_band_bytes;
  if (!Array.isArray(band) || band.length !== 2 || !band.every((b) => typeof b === 'number')) return null;
  const cases = typeof result.measured_band_cases === 'number' ? formatCount(result.measured_band_cases) : 'the';
  return (
    <div class="stat-note measured-band" data-testid="measured-band" title={result.measured_band_population}>
      Likely <Bytes bytes={band[0]} units={units} /> – <Bytes bytes={band[1]} units={units} />, from how {cases} published
      runs{result.measured_band_fallback ? '' : ' like this'} compared with memfit (the middle 80{'\u00a0'}%)
    </div>
  );
}

// The same runs' band on the device total (result.device_total_band_bytes): its top is the number
// the verdict holds to the budget (fits.need_high_bytes), so the verdict's arithmetic is on screen.
// The range the allocator's fragmentation alone spans is in its tooltip.
function DeviceTotalBand({ result, units, fragmentation }) {
  const band = result.device_total_band_bytes;
  if (band.length !== 2 || !band.every((b) => typeof b === 'number')) return null;
  return (
    <div class="stat-note measured-band" data-testid="device-total-band"
      title={`${fragmentation} with the allocator's fragmentation alone; ${result.measured_band_population}`}>
      Likely <Bytes bytes={band[0]} units={units} /> – <Bytes bytes={band[1]} units={units} /> from the same runs; the verdict holds the top to the budget
    </div>
  );
}

// How close memfit came to published measurements (statistics about memfit, not an estimate).
export function AccuracyLine() {
  return (
    <p class="accuracy-line" data-testid="accuracy-line">
      Scored against {formatCount(count)} published GPU runs: median error {formatPercent(medianAbsError, { decimals: 1 })}.{' '}
      <a href={ACCURACY_PAGE}>How accurate is this?</a>
    </p>
  );
}

// The method in words: LoRA's rank, another PEFT method's name, or which blocks a full fine-tune trains.
function methodWords(f, layers) {
  if (f.method === 'lora') return `${f.base_bits === 4 ? 'QLoRA' : 'LoRA'} rank ${f.lora_rank}`;
  if (f.method && f.method !== 'full') return choiceWords('training.finetune.method', f.method).label;
  return f.trainable_layers >= 0 ? `full fine-tune of ${f.trainable_layers} of ${layers} blocks` : 'full fine-tune';
}

// The run in one line of words: model, batch, precision, optimizer, GPUs.
export function runLine(result, modelName) {
  const c = result.config;
  const t = c.training;
  const p = c.parallel;
  const parts = [
    modelName,
    // The code that runs the model, when it is not the default (transformers).
    t.framework && t.framework !== 'hf' ? choiceWords('training.framework', t.framework).label : null,
    `micro-batch ${formatCount(t.micro_batch_size)} × ${formatCount(t.seq_len)} tokens`,
    methodWords(t.finetune ?? {}, c.model?.num_hidden_layers),
    choiceWords('training.precision', t.precision).label,
    optimizerWords(result),
    t.checkpointing !== 'none' ? `${choiceWords('training.checkpointing', t.checkpointing).label.toLowerCase()} checkpointing` : null,
    gpuWords(p),
  ];
  return parts.filter(Boolean).join(' · ');
}

// The optimizer, and for AdamW the step it runs (training.optimizer_impl, auto resolved by the core
// to the framework's own).
const STEP_WORDS = { fused: 'fused', foreach: 'multi-tensor', for_loop: 'one tensor at a time', foreach_legacy: 'multi-tensor, PyTorch ≤ 2.0' };
function optimizerWords(result) {
  const t = result.config.training;
  const label = choiceWords('training.optimizer', t.optimizer).label;
  const step = t.optimizer === 'adamw' ? result.implementation?.optimizer_impl : null;
  return step ? `${label} (${STEP_WORDS[step] ?? step})` : label;
}

// The GPUs and how the run is laid out over them: ZeRO, the model-parallel degrees, offload.
function gpuWords(p) {
  const layout = [
    p.zero_stage ? `ZeRO-${p.zero_stage}` : null,
    ...[['TP', p.tensor], ['PP', p.pipeline], ['CP', p.context], ['EP', p.expert]].map(([n, v]) => (v > 1 ? `${n} ${v}` : null)),
    offloadWords(p),
  ].filter(Boolean);
  const gpus = p.num_gpus > 1 ? `${formatCount(p.num_gpus)} GPUs` : '1 GPU';
  return `${gpus}${layout.length ? `, ${layout.join(', ')}` : ''}`;
}

const offloadWords = (p) =>
  p.offload_optimizer && p.offload_params ? 'states and weights offloaded' : p.offload_optimizer ? 'states offloaded' : p.offload_params ? 'weights offloaded' : null;

// The link to the form scrolls to it without writing #inputs into the address (which a reload or
// a copied address would then reopen at the form).
function toForm(event) {
  const form = document.querySelector(event.currentTarget.getAttribute('href'));
  if (!form) return;
  event.preventDefault();
  form.scrollIntoView({ block: 'start' });
}

// solve: the headline's answer (the fewest GPUs, the largest micro-batch), drawn under the numbers.
// editHref: where the form is, for a link after the run's summary that only narrow screens show
// (there the form comes after the whole answer; on a wide screen it stands beside it).
export function Headline({ result, units, modelName, solve = null, editHref = null }) {
  const fit = result.fits;
  const [lo, hi] = result.device_total_range_bytes ?? [];
  return (
    <div class="headline-wrap">
    <p class="run-line">
      <span data-testid="run-line">{runLine(result, modelName)}</span>
      {editHref && <span class="run-edit"> · <a href={editHref} data-testid="run-edit" onClick={toForm}>Change the inputs</a></span>}
    </p>
    <div class="headline">
      <div class="stat">
        <div class="stat-label">Peak allocated</div>
        <div class="stat-value"><Bytes bytes={result.peak_allocated_bytes} units={units} testid="peak-allocated" /></div>
        <div class="stat-note" title="torch.cuda.max_memory_allocated() over one training step">the most allocated at once in a step</div>
        <MeasuredBand result={result} units={units} />
      </div>
      <div class="stat">
        <div class="stat-label">Device total (nvidia-smi)</div>
        <div class="stat-value"><Bytes bytes={result.device_total_bytes} units={units} testid="device-total" /></div>
        {Array.isArray(result.device_total_band_bytes)
          ? <DeviceTotalBand result={result} units={units} fragmentation={`${formatBytes(lo, units)} – ${formatBytes(hi, units)}`} />
          : (
            <div class="stat-note" title={`${formatExactBytes(lo)} – ${formatExactBytes(hi)}`}>
              {formatBytes(lo, units)} – {formatBytes(hi, units)} with fragmentation
            </div>
          )}
      </div>
      <div class={`stat stat-verdict verdict-${fit.verdict}`} data-testid="verdict">
        <div class="stat-label">On {fit.name}</div>
        <div class="stat-value"><VerdictBadge verdict={fit.verdict} /></div>
        <Gauge fit={fit} units={units} />
        <div class="stat-note"><Headroom fit={fit} units={units} /></div>
        {fit.runs === false && <div class="stat-note" data-testid="verdict-lacks"><strong>No {fit.lacks} tensor cores</strong>: PyTorch emulates it here, far slower</div>}
      </div>
    </div>
    {solve}
    </div>
  );
}
