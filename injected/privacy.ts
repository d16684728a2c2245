// Privacy rules (docs/page-script.md): keys typed into password, one-time-code and payment-card fields are
// never reported, and the click text of such fields is empty. A field is sensitive by its type
// (`password`, also after a "show password" toggle turned it into text, through its autocomplete
// token) or by an autocomplete token: `current-password`, `new-password`, `one-time-code`, `cc-*`.

const SENSITIVE_AUTOCOMPLETE = /(?:^|\s)(?:current-password|new-password|one-time-code|cc-[a-z-]+)(?:\s|$)/i;

export function isSensitiveField(element: Element): boolean {
  if (element instanceof HTMLInputElement && element.type === 'password') return true;
  const autocomplete = element.getAttribute('autocomplete');
  return autocomplete !== null && SENSITIVE_AUTOCOMPLETE.test(autocomplete);
}

/** Form fields whose content is what the user typed or picked: their text is never reported. */
export function isFormField(element: Element): boolean {
  if (element instanceof HTMLInputElement) return !BUTTON_INPUT_TYPES.has(element.type);
  return element instanceof HTMLTextAreaElement || element instanceof HTMLSelectElement;
}

const BUTTON_INPUT_TYPES = new Set(['button', 'submit', 'reset', 'image']);
