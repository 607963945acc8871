// The seq-ql editor: a textarea over a highlighted copy of its text, field and value completion, the error at its position.
import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { Field } from './api';
import { completionAt, quoteValue, tokenize, type CompletionSpot } from './seql';

export interface QueryError { message: string; position: number | null }

export interface ValueSuggestions { values: { key: string; count: number }[]; capped: boolean }

export interface QueryEditorProps {
  value: string;
  onChange: (q: string) => void;
  onSubmit: (q: string) => void;
  error: QueryError | null;
  fields: Field[];
  suggestValues: (field: string, prefix: string) => Promise<ValueSuggestions>;
}

interface Item { label: string; insert: string; detail: string }

const MAX_ITEMS = 12;

function highlighted(src: string, errorAt: number | null): ReactNode[] {
  const nodes: ReactNode[] = [];
  for (const t of tokenize(src)) {
    const end = t.start + t.text.length;
    if (errorAt !== null && errorAt >= t.start && errorAt < end) {
      const k = errorAt - t.start;
      nodes.push(<span key={`${t.start}a`} className={`tok-${t.kind}`}>{t.text.slice(0, k)}</span>);
      nodes.push(<span key={`${t.start}e`} className={`tok-${t.kind} err-mark`} data-testid="error-mark">{t.text.slice(k, k + 1)}</span>);
      nodes.push(<span key={`${t.start}b`} className={`tok-${t.kind}`}>{t.text.slice(k + 1)}</span>);
    } else nodes.push(<span key={t.start} className={`tok-${t.kind}`}>{t.text}</span>);
  }
  // At the end of the text the mark is a visible space.
  if (errorAt !== null && errorAt >= src.length) nodes.push(<span key="end" className="err-mark" data-testid="error-mark">{' '}</span>);
  return nodes;
}

export function QueryEditor(props: QueryEditorProps) {
  const area = useRef<HTMLTextAreaElement>(null);
  const mirror = useRef<HTMLPreElement>(null);
  const [spot, setSpot] = useState<CompletionSpot | null>(null);
  const [items, setItems] = useState<Item[]>([]);
  const [capped, setCapped] = useState(false);
  const [active, setActive] = useState(0);
  const asked = useRef(0);
  /** The user moved through the list with the arrow keys since it last changed. */
  const navigated = useRef(false);
  const errorAt = props.error?.position ?? null;
  const nodes = useMemo(() => highlighted(props.value, errorAt), [props.value, errorAt]);

  const close = () => {
    asked.current++;
    setSpot(null);
    setItems([]);
  };

  /** Looks at the word under the caret and fills the completion list (values are fetched, the latest ask wins). */
  const refresh = (text: string, caret: number, explicit: boolean) => {
    const s = completionAt(text, caret);
    const ask = ++asked.current;
    navigated.current = false;
    if (!s || (s.kind === 'field' && !s.prefix && !explicit)) {
      setSpot(null);
      setItems([]);
      return;
    }
    setSpot(s);
    setActive(0);
    if (s.kind === 'field') {
      const p = s.prefix.toLowerCase();
      const starts = props.fields.filter((f) => f.name.toLowerCase().startsWith(p));
      const contains = props.fields.filter((f) => !f.name.toLowerCase().startsWith(p) && f.name.toLowerCase().includes(p));
      setItems([...starts, ...contains].slice(0, MAX_ITEMS).map((f) => ({ label: f.name, insert: `${f.name}:`, detail: f.type })));
      setCapped(false);
      return;
    }
    if (!props.fields.some((f) => f.name === s.field)) {
      setItems([]);
      return;
    }
    props.suggestValues(s.field, s.prefix).then(
      (r) => {
        if (ask !== asked.current) return;
        setItems(r.values.slice(0, MAX_ITEMS).map((v) => ({ label: v.key, insert: `${quoteValue(v.key)} `, detail: String(v.count) })));
        setCapped(r.capped);
      },
      () => {
        if (ask === asked.current) setItems([]);
      },
    );
  };

  const accept = (it: Item) => {
    const el = area.current;
    if (!el || !spot) return;
    const caret = el.selectionStart;
    const next = props.value.slice(0, spot.start) + it.insert + props.value.slice(caret);
    const at = spot.start + it.insert.length;
    props.onChange(next);
    requestAnimationFrame(() => {
      el.focus();
      el.setSelectionRange(at, at);
      refresh(next, at, false);
    });
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    const open = items.length > 0;
    if (open && e.key === 'ArrowDown') { e.preventDefault(); navigated.current = true; setActive((a) => (a + 1) % items.length); return; }
    if (open && e.key === 'ArrowUp') { e.preventDefault(); navigated.current = true; setActive((a) => (a - 1 + items.length) % items.length); return; }
    // Enter takes the highlighted item when the user chose it or it completes what is typed; a fully typed value runs the query.
    const chosen = open && (navigated.current || items[active]!.label !== spot?.prefix);
    if (open && (e.key === 'Tab' || (e.key === 'Enter' && !e.shiftKey && chosen))) { e.preventDefault(); accept(items[active]!); return; }
    if (e.key === 'Escape') {
      if (open) e.preventDefault();
      close();
      return;
    }
    if (e.key === ' ' && e.ctrlKey) { e.preventDefault(); refresh(props.value, e.currentTarget.selectionStart, true); return; }
    if (e.key === 'Enter' && !e.shiftKey) {
      e.preventDefault();
      close();
      props.onSubmit(props.value);
    }
  };

  // The highlighted copy scrolls with the textarea.
  useEffect(() => {
    const el = area.current;
    if (!el) return undefined;
    const sync = () => {
      if (mirror.current) {
        mirror.current.scrollTop = el.scrollTop;
        mirror.current.scrollLeft = el.scrollLeft;
      }
    };
    el.addEventListener('scroll', sync);
    return () => el.removeEventListener('scroll', sync);
  }, []);

  const rows = Math.min(6, props.value.split('\n').length);
  return (
    <div className="query-editor">
      <div className={`editor-box${props.error ? ' has-error' : ''}`} style={{ height: `${rows * 20 + 14}px` }}>
        <pre ref={mirror} className="editor-mirror" aria-hidden="true">{nodes}{'\n'}</pre>
        <textarea
          ref={area}
          className="editor-input"
          data-testid="query-input"
          aria-label="Query (seq-ql)"
          aria-invalid={props.error ? true : undefined}
          aria-describedby={props.error ? 'query-error' : undefined}
          aria-autocomplete="list"
          aria-expanded={items.length > 0}
          aria-controls="query-completions"
          spellCheck={false}
          autoComplete="off"
          placeholder="service:api and level:error"
          title="seq-ql: Enter runs the query, Shift+Enter starts a new line, Ctrl+Space completes"
          value={props.value}
          onChange={(e) => {
            props.onChange(e.target.value);
            refresh(e.target.value, e.target.selectionStart, false);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => setTimeout(close, 150)}
        />
        {items.length > 0 && (
          <ul className="completions" id="query-completions" role="listbox" data-testid="completions">
            {items.map((it, i) => (
              <li key={it.label} role="option" aria-selected={i === active} className={i === active ? 'active' : undefined}
                onMouseDown={(e) => { e.preventDefault(); accept(it); }}>
                <span className="c-label">{it.label}</span><span className="c-detail">{it.detail}</span>
              </li>
            ))}
            {capped && <li className="c-note" role="presentation">most frequent values only; type to narrow</li>}
          </ul>
        )}
      </div>
      {props.error && (
        <div className="query-error" id="query-error" role="alert" data-testid="query-error">
          {props.error.position !== null && <span className="pos">at {props.error.position + 1}: </span>}
          {props.error.message}
        </div>
      )}
    </div>
  );
}
