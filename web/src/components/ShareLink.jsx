import { useEffect, useState } from 'preact/hooks';

// Copies text; true only when the browser says it copied.
export async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Clipboard API refused (insecure context, permissions): the old way.
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    const ok = document.execCommand?.('copy') ?? false;
    area.remove();
    return ok;
  }
}

export function ShareLink({ href }) {
  const [copied, setCopied] = useState(null);
  useEffect(() => {
    if (copied === null) return undefined;
    const t = setTimeout(() => setCopied(null), 2000);
    return () => clearTimeout(t);
  }, [copied]);
  return (
    <button
      type="button"
      class="button primary"
      data-href={href}
      data-testid="copy-link"
      title={href}
      onClick={async () => setCopied(await copyText(href))}
    >
      {copied === true ? 'Link copied' : copied === false ? 'Copy failed: use the address bar' : 'Copy link'}
    </button>
  );
}
