import { formatBytes, formatExactBytes } from '../../format.js';

// A byte count as the page shows it: formatted in the chosen units, exact in the tooltip and in
// data-bytes (what tests compare with the core).
export function Bytes({ bytes, units, testid }) {
  return (
    <span class="bytes" data-bytes={bytes} data-testid={testid} title={formatExactBytes(bytes)}>
      {formatBytes(bytes, units)}
    </span>
  );
}
