// Fetching a config.json from the Hugging Face Hub. Every failure becomes a message the page can
// show; nothing here throws. Pure apart from the injected fetch.

const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/[A-Za-z0-9][A-Za-z0-9._-]*)?$/;

export function hubConfigUrl(modelId) {
  return `https://huggingface.co/${modelId}/resolve/main/config.json`;
}

// → { ok: true, text, url } or { ok: false, message }.
export async function fetchHubConfig(modelId, { fetchImpl = globalThis.fetch, timeoutMs = 15000 } = {}) {
  // A model page's address, or a file's in it (…/blob/main/config.json, …/tree/main): the id.
  const id = String(modelId ?? '').trim().replace(/^https?:\/\/huggingface\.co\//, '')
    .replace(/\/(blob|resolve|tree)\/.*$/, '').replace(/\/+$/, '');
  if (!MODEL_ID.test(id)) {
    return { ok: false, message: 'Enter a model id like "meta-llama/Llama-3.1-8B" (organisation/name).' };
  }
  const url = hubConfigUrl(id);
  const controller = typeof AbortController === 'function' ? new AbortController() : null;
  const timer = controller ? setTimeout(() => controller.abort(), timeoutMs) : null;
  try {
    const response = await fetchImpl(url, { signal: controller?.signal });
    if (response.status === 401 || response.status === 403) {
      return { ok: false, message: `${id} is gated or private: the Hub wants you to sign in and accept its licence. Open huggingface.co/${id}, then paste its config.json here.` };
    }
    if (response.status === 404) {
      return { ok: false, message: `No config.json found for ${id}: check the spelling of the model id.` };
    }
    if (!response.ok) {
      return { ok: false, message: `The Hub answered ${response.status} for ${id}. Try again later, or paste its config.json.` };
    }
    return { ok: true, text: await response.text(), url };
  } catch (error) {
    const timedOut = error?.name === 'AbortError';
    return {
      ok: false,
      message: timedOut
        ? 'huggingface.co did not answer in time. Paste the config.json instead.'
        : 'Could not reach huggingface.co (offline, or blocked by the network). Paste the config.json instead.',
    };
  } finally {
    if (timer) clearTimeout(timer);
  }
}
