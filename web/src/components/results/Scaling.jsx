// The seeds' scaling table (scaling_table()): their five models at this page's training settings.
import { formatCountShort, formatCount } from '../../format.js';
import { plainMessage, plainText } from '../../words.js';
import { Bytes } from './Bytes.jsx';

export function Scaling({ scaling, units }) {
  if (!scaling) return null;
  return (
    <section class="card" aria-labelledby="h-scaling">
      <h2 id="h-scaling">Scaling: the source documents' five models</h2>
      <p class="card-note">
        The same training settings (micro-batch, sequence length, precision, optimizer) applied to the idealised models
        of the source documents at their nominal sizes, each as a full fine-tune, without and with full activation
        checkpointing. Static is the
        weights, gradients, optimizer states and master weights. Total is the step's peak allocated, which is not their
        sum with the activations: it is less when the gradients and the activations are not all held at once, and more
        with what neither column holds (16-bit weight copies, the optimizer step's temporaries). Under the textbook
        convention it is the sum.
      </p>
      {!scaling.ok ? (
        <ul class="warnings">{scaling.errors.map((e) => <li key={e.message}>{plainMessage(e.message)}</li>)}</ul>
      ) : (
        <div class="table-scroll" tabIndex={0} role="region" aria-label="Scaling table">
          <table class="table scaling" data-testid="scaling-table">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col" class="num">Parameters</th>
                <th scope="col" class="num">Static</th>
                <th scope="col" class="num">Activations</th>
                <th scope="col" class="num">Total</th>
                <th scope="col" class="num">Act. (ckpt)</th>
                <th scope="col" class="num">Total (ckpt)</th>
              </tr>
            </thead>
            <tbody>
              {scaling.rows.map((row) => (
                <tr key={row.preset} data-preset={row.preset}>
                  <th scope="row">{plainText(row.name)}</th>
                  {row.errors ? (
                    <td colSpan={6} class="muted">{row.errors.map((e) => plainMessage(e.message)).join('; ')}</td>
                  ) : (
                    <>
                      <td class="num" title={formatCount(row.parameter_count)}>{formatCountShort(row.parameter_count)}</td>
                      <td class="num"><Bytes bytes={row.static_bytes} units={units} /></td>
                      <td class="num"><Bytes bytes={row.activation_bytes} units={units} /></td>
                      <td class="num strong"><Bytes bytes={row.total_bytes} units={units} /></td>
                      <td class="num"><Bytes bytes={row.activation_checkpointed_bytes} units={units} /></td>
                      <td class="num strong"><Bytes bytes={row.total_checkpointed_bytes} units={units} /></td>
                    </>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
