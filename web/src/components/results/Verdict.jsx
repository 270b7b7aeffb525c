const TEXT = { fits: 'Fits', tight: 'Tight', does_not_fit: 'Does not fit' };

export function VerdictBadge({ verdict }) {
  return (
    <span class={`badge badge-${verdict}`} data-verdict={verdict}>
      {TEXT[verdict] ?? verdict}
    </span>
  );
}
