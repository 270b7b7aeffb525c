// The precision recipe, with its bytes per parameter stated.
import { choiceWords, plainText } from '../../words.js';

export function Recipe({ recipe }) {
  if (!recipe) return null;
  const items = [
    ['weights', recipe.weight_bytes, 'B / parameter'],
    ['gradients', recipe.gradient_bytes, 'B / trainable parameter'],
    ['master copy', recipe.master_bytes, 'B / trainable parameter'],
    ['optimizer state element', recipe.optimizer_state_element_bytes, 'B'],
    ['activation element', recipe.activation_bytes, 'B'],
  ].filter(([, v]) => typeof v === 'number');
  return (
    <div class="recipe" data-testid="recipe">
      <p>
        <span class="recipe-name">{choiceWords('training.precision', recipe.name).label}</span>: {plainText(recipe.description)}.
      </p>
      <ul class="recipe-bytes">
        {items.map(([what, value, unit]) => (
          <li key={what}><span class="num">{value}</span> {unit} <span class="muted">{what}</span></li>
        ))}
      </ul>
    </div>
  );
}
