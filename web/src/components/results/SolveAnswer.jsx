// The headline's answer, next to the verdict: the core's solver for the run on screen (solve()).
// When the run does not fit: the fewest GPUs of this card that fit it with ZeRO-3 / FSDP sharding;
// when it fits: the largest micro-batch. Each names the term that binds. The page only words it.
// With it, the button that opens the planner. Drawn by the details module (prerendered in the
// first view).
import { formatCount } from '../../format.js';
import { plainMessage } from '../../words.js';
import { togglePlanner } from '../planner/PlannerSlot.jsx';

// The breakdown's terms the solver names (solve.cpp), in words.
const TERMS = {
  parameters: 'the weights', gradients: 'the gradients', optimizer_states: 'the optimizer states',
  master_weights: 'the master weights', activations: 'the activations', logits_and_loss: 'the logits and loss',
  weight_copies: 'the weight copies',
};

const PER_GPU = new Set(['activations', 'logits_and_loss']);

// What binds: a term, or a rule of the configuration ("model.max_position_embeddings (must be …)").
const bindingWords = (binding) => TERMS[binding] ?? plainMessage(binding);

// What does shrink a per-GPU term, leaving out what the run already does: the run as the core
// resolved it (its implementation's loss kernel, its checkpointing).
function shrinkWords(binding, result) {
  const loss = result?.implementation?.loss ?? 'eager';
  const training = result?.config?.training ?? {};
  if (binding === 'logits_and_loss') {
    return loss !== 'eager' || training.chunked_loss ? 'a smaller micro-batch or a shorter sequence does'
      : 'a chunked cross-entropy or a smaller micro-batch does';
  }
  return training.checkpointing === 'full' ? 'a smaller micro-batch or a shorter sequence does'
    : 'checkpointing or a smaller micro-batch does';
}

function Answer({ answer, gpu, result }) {
  if (!answer) return null;
  if (!answer.ok) return <span>{plainMessage(answer.errors?.[0]?.message ?? '')}</span>;
  const gpus = answer.target === 'min-gpus';
  const binds = answer.binding && <span class="solve-binding"> · limited by {bindingWords(answer.binding)}</span>;
  if (!answer.found) {
    // Terms that are per GPU whatever the count (data parallelism shards neither): say so, and
    // what does shrink them, rather than how far the search went (a tight run can still run).
    if (gpus && PER_GPU.has(answer.binding)) {
      return <><strong>More GPUs do not help</strong>: {bindingWords(answer.binding)} per GPU do not shrink with ZeRO-3 / FSDP sharding; {shrinkWords(answer.binding, result)}</>;
    }
    return gpus
      ? <><strong>No number of {gpu} fits</strong> with ZeRO-3 / FSDP sharding (tried up to {formatCount(answer.next?.value)}){binds}</>
      : <><strong>No micro-batch fits</strong> this run on the {gpu}{binds}</>;
  }
  // The count only creeps under the budget: half as many GPUs need almost as much (the core's
  // sharding_saturated), so what binds is kept whole on every GPU.
  if (gpus && answer.sharding_saturated) {
    const kept = PER_GPU.has(answer.binding) ? `${bindingWords(answer.binding)} per GPU do not` : 'what each GPU keeps whole does not';
    return <><strong>Sharding barely helps</strong>: {formatCount(answer.value)} × {gpu} with ZeRO-3 / FSDP would fit, but
      {' '}{formatCount(answer.half?.value)} need almost as much; {kept} shrink with more GPUs; {shrinkWords(answer.binding, result)}</>;
  }
  // A rule of the layout (not a term of the memory) stopped one GPU fewer: say it that way.
  const rule = gpus && answer.binding && !TERMS[answer.binding];
  return gpus
    ? <><strong>Needs {formatCount(answer.value)} × {gpu}</strong> with ZeRO-3 / FSDP sharding{rule
      ? <span class="solve-binding"> · {formatCount(answer.value - 1)} cannot take this layout: {bindingWords(answer.binding)}</span>
      : binds}</>
    : <><strong>Largest micro-batch that fits: {formatCount(answer.value)}</strong>{binds}</>;
}

// state.solved: the core's solve() answer for the run on screen (null while it works).
export function SolveAnswer({ state }) {
  const answer = state.solved.value;
  const fit = state.shown.value?.result.fits;
  if (!fit) return null;
  const open = Boolean(state.planner.value.open);
  return (
    <div class="solve-line" data-testid="solve-answer" data-target={answer?.target} data-found={answer ? String(answer.found) : undefined}
      data-value={answer?.found ? answer.value : undefined} data-binding={answer?.binding}>
      <p class="solve-text" aria-live="polite" aria-busy={!answer}>
        {answer ? <Answer answer={answer} gpu={fit.name} result={state.shown.value?.result} />
          : fit.verdict === 'fits' ? 'Finding the largest micro-batch that fits…' : 'Finding the fewest GPUs that fit…'}
      </p>
      <button type="button" class="button" id="open-planner" aria-expanded={open} aria-controls={open ? 'planner' : undefined}
        onClick={() => togglePlanner(state)} data-testid="open-planner">
        Plan GPUs and layout
      </button>
    </div>
  );
}
