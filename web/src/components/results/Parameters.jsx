// Parameter counts (exact) and by component.
import { formatCount, formatCountShort, share } from '../../format.js';
import { componentLabel } from '../componentLabel.js';
import { Recipe } from './Recipe.jsx';

export function Parameters({ result }) {
  const total = result.architecture_parameter_count ?? result.parameter_count;
  const layers = result.parameters_by_layer;
  const rows = Object.entries(result.parameters_by_component ?? {});
  return (
    <section class="card" aria-labelledby="h-params">
      <h2 id="h-params">Model and recipe</h2>
      <dl class="facts">
        <div><dt>{result.vision_parameter_count > 0 ? 'Language model' : 'Parameters'}</dt><dd class="num" data-testid="parameter-count">{formatCount(result.parameter_count)}</dd></div>
        <div><dt>Trainable</dt><dd class="num">{formatCount(result.trainable_parameter_count)}</dd></div>
        {result.architecture_parameter_count !== undefined && result.architecture_parameter_count !== result.parameter_count && (
          <div><dt>Counted architecture</dt><dd class="num">{formatCount(result.architecture_parameter_count)}</dd></div>
        )}
        {result.vision_parameter_count > 0 && (
          <div><dt>Vision tower ({!result.vision_trained_parameter_count ? 'frozen'
            : result.vision_trained_parameter_count === result.vision_parameter_count ? 'trained' : 'part trained'})</dt>
            <dd class="num" data-testid="vision-parameter-count">{formatCount(result.vision_parameter_count)}</dd></div>
        )}
        {result.vision_trained_parameter_count > 0 && result.vision_trained_parameter_count < result.vision_parameter_count && (
          <div><dt>Of it trained</dt><dd class="num" data-testid="vision-trained-count">{formatCount(result.vision_trained_parameter_count)}</dd></div>
        )}
        {result.active_parameter_count !== undefined && result.active_parameter_count !== result.architecture_parameter_count && (
          <div><dt>Active per token</dt><dd class="num">{formatCount(result.active_parameter_count)}</dd></div>
        )}
      </dl>
      <table class="table compact components">
        <thead><tr><th scope="col">Component</th><th scope="col" class="num">Parameters</th><th scope="col" class="share-col"><span class="visually-hidden">Share</span></th></tr></thead>
        <tbody>
          {rows.map(([key, count]) => (
            <tr key={key} data-component={key}>
              <th scope="row">{componentLabel(key)}</th>
              <td class="num" title={formatCountShort(count)}>{formatCount(count)}</td>
              <td class="share-col"><span class="mini-bar" style={{ width: `${share(count, total)}%` }} /></td>
            </tr>
          ))}
        </tbody>
      </table>
      {layers && (
        <p class="card-note">
          {formatCount(layers.dense_layers)} dense block{layers.dense_layers === 1 ? '' : 's'} × {formatCount(layers.per_dense_layer)}
          {layers.moe_layers > 0 && <> + {formatCount(layers.moe_layers)} MoE blocks × {formatCount(layers.per_moe_layer)}</>}
          {' '}= {formatCount(layers.blocks)} in the blocks.
        </p>
      )}
      <h3 class="group-title">Precision recipe</h3>
      <Recipe recipe={result.recipe} />
    </section>
  );
}
