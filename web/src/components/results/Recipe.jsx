// The precision recipe, with its bytes per parameter stated.
import { choiceWords, plainText } from '../../words.js';

// A parameter-efficient run: the core states its frozen base's bits per parameter and its trained
// weights' bytes apart from the recipe's (recipe.frozen_base_bits, trained_weight_bytes).
export function Recipe({ recipe }) {
  if (!recipe) return null;
  const peft = typeof recipe.frozen_base_bits === 'number';
  const bits = recipe.frozen_base_bits;
  const label = choiceWords('training.precision', recipe.name).label;
  // The description can begin with what the label already says ("PyTorch AMP: …").
  const description = plainText(recipe.description);
  const lead = description.match(/^([^:]{1,40}): /);
  const said = lead && label.includes(lead[1]) ? description.slice(lead[0].length) : description;
  const items = [
    [peft ? 'trained weights' : 'weights', peft ? recipe.trained_weight_bytes : recipe.weight_bytes, peft ? 'B / trainable parameter' : 'B / parameter'],
    ...(peft ? [[`frozen base (${bits}-bit)${bits < 16 ? ', plus its quantisation constants' : ''}`, `${bits / 8}`, 'B / frozen parameter']] : []),
    ['gradients', peft ? recipe.trained_gradient_bytes : recipe.gradient_bytes, 'B / trainable parameter'],
    ['master copy', recipe.master_bytes, 'B / trainable parameter'],
    ['optimizer state element', peft ? recipe.trained_state_element_bytes : recipe.optimizer_state_element_bytes, 'B'],
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
