// A tiny HTML template helper for the audit page: every interpolated value is escaped
// unless it is itself a Html fragment built here. Paths, commit messages, actor and repo
// names are agent-written, so nothing reaches the page unescaped by accident.

export class Html {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"'`]/g, (c) => ESC[c]!);
}

type Part = Html | string | number | null | undefined | boolean | readonly Part[];

function render(v: Part): string {
  if (v === null || v === undefined || v === false || v === true) return '';
  if (v instanceof Html) return v.text;
  if (Array.isArray(v)) return v.map(render).join('');
  return escapeHtml(v);
}

/** html`<p>${userText}</p>`: interpolations escaped, arrays joined, Html fragments kept. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!;
  return new Html(out);
}

/** JSON for a `<script type="application/json">` block: `<`, `>` and `&` escaped so no tag can close it. */
export function jsonBlock(value: unknown): Html {
  return new Html(JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`));
}
