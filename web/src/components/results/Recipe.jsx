// The precision recipe, with its bytes per parameter stated.
import { choiceWords, plainText } from '../../words.js';

// A PEFT run stores its frozen base apart from the recipe's weights (the trained ones): in 16 bits,
// or quantised to 8 or 4 (training.finetune.base_bits).
const BASE_WORDS = { 16: ['2', 'B / frozen parameter', 'frozen base (16-bit)'], 8: ['1', 'B / frozen parameter', 'frozen base (8-bit)'],
  4: ['0.5', 'B / frozen parameter', 'frozen base (4-bit), plus its quantisation constants'] };

export function Recipe({ recipe, finetune = null }) {
  if (!recipe) return null;
  const peft = finetune?.method && finetune.method !== 'full';
  const base = peft ? BASE_WORDS[finetune.base_bits ?? 16] : null;
  const label = choiceWords('training.precision', recipe.name).label;
  // The description can begin with what the label already says ("PyTorch AMP: …").
  const description = plainText(recipe.description);
  const lead = description.match(/^([^:]{1,40}): /);
  const said = lead && label.includes(lead[1]) ? description.slice(lead[0].length) : description;
  const items = [
    [peft ? 'trained weights' : 'weights', recipe.weight_bytes, peft ? 'B / trainable parameter' : 'B / parameter'],
    ...(base ? [[base[2], base[0], base[1]]] : []),
    ['gradients', recipe.gradient_bytes, 'B / trainable parameter'],
    ['master copy', recipe.master_bytes, 'B / trainable parameter'],
    ['optimizer state element', recipe.optimizer_state_element_bytes, 'B'],
    ['activation element', recipe.activation_bytes, 'B'],
  ].filter(([, v]) => typeof v === 'number' || typeof v === 'string');
  return (
    <div class="recipe" data-testid="recipe">
      <p>
        <span class="recipe-name">{label}</span>: {said}.
      </p>
      <ul class="recipe-bytes">
        {items.map(([what, value, unit]) => (
          <li key={what}><span class="num">{value}</span> {unit} <span class="muted">{what}</span></li>
        ))}
      </ul>
    </div>
  );
}
