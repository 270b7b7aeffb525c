// A chart's frame: its title, a Chart / Table switch (kept in the share link), a one-sentence
// summary that screen readers get as the chart's description, and the chart or its table.
import { useEffect, useRef, useState } from 'preact/hooks';

export function ChartSwitch({ id, asTable, onTable, label }) {
  return (
    <div class="segmented small" role="group" aria-label={`Show ${label} as`}>
      <button type="button" aria-pressed={!asTable} class={asTable ? '' : 'on'} onClick={() => onTable(false)} data-testid={`${id}-as-chart`}>Chart</button>
      <button type="button" aria-pressed={asTable} class={asTable ? 'on' : ''} onClick={() => onTable(true)} data-testid={`${id}-as-table`}>Table</button>
    </div>
  );
}

// id: the chart's name (breakdown, timeline, sweep, gpus); summary: text; children: the chart
// ({ summaryId } for aria-describedby); table: the fallback; extra: controls next to the switch.
export function ChartCard({ id, title, note, summary, asTable, onTable, chart, table, extra, testid }) {
  const summaryId = `${id}-summary`;
  return (
    <section class="card chart-card" aria-labelledby={`h-${id}`} data-testid={testid ?? `chart-${id}`} data-view={asTable ? 'table' : 'chart'}>
      <div class="card-head">
        <h2 id={`h-${id}`}>{title}</h2>
        <div class="card-tools">
          {extra}
          <ChartSwitch id={id} asTable={asTable} onTable={onTable} label={title.toLowerCase()} />
        </div>
      </div>
      {note && <p class="card-note">{note}</p>}
      <p class="chart-summary" id={summaryId} data-testid={`${id}-summary`}>{summary}</p>
      {asTable ? table : chart(summaryId)}
    </section>
  );
}

// The width of an element, followed as it changes (charts draw in CSS pixels so their text stays
// readable on a phone). `fallback` until measured (and when prerendered).
export function useWidth(fallback = 640) {
  const ref = useRef(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver !== 'function') return undefined;
    const observer = new ResizeObserver(([entry]) => {
      const w = Math.round(entry.contentRect.width);
      if (w > 0) setWidth((old) => (Math.abs(old - w) >= 2 ? w : old));
    });
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return [ref, width];
}
