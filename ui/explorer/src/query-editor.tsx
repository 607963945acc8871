// The seq-ql editor: a textarea over a highlighted copy of its text, field and value completion, the error at its position.
import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { Field } from './api';
import { completionAt, quoteValue, tokenize, type CompletionSpot } from './seql';

export interface QueryError {
  message: string;
  position: number | null;
}

export interface ValueSuggestions {
  values: { key: string; count: number }[];
  capped: boolean;
}

export interface QueryEditorProps {
  value: string;
  onChange: (q: string) => void;
  onSubmit: (q: string) => void;
  error: QueryError | null;
  fields: Field[];
  suggestValues: (field: string, prefix: string) => Promise<ValueSuggestions>;
}

/** A completion, with what it completes: a field name, or a value of `field` (items of an older spot are never applied). */
interface Item {
  label: string;
  insert: string;
  detail: string;
  kind: CompletionSpot['kind'];
  field: string;
}

const MAX_ITEMS = 12;

function highlighted(src: string, errorAt: number | null): ReactNode[] {
  const nodes: ReactNode[] = [];
  for (const t of tokenize(src)) {
    const end = t.start + t.text.length;
    if (errorAt !== null && errorAt >= t.start && errorAt < end) {
      const k = errorAt - t.start;
      nodes.push(
        <span key={`${t.start}a`} className={`tok-${t.kind}`}>
          {t.text.slice(0, k)}
        </span>,
      );
      nodes.push(
        <span key={`${t.start}e`} className={`tok-${t.kind} err-mark`} data-testid="error-mark">
          {t.text.slice(k, k + 1)}
        </span>,
      );
      nodes.push(
        <span key={`${t.start}b`} className={`tok-${t.kind}`}>
          {t.text.slice(k + 1)}
        </span>,
      );
    } else
      nodes.push(
        <span key={t.start} className={`tok-${t.kind}`}>
          {t.text}
        </span>,
      );
  }
  // At the end of the text the mark is a visible space.
  if (errorAt !== null && errorAt >= src.length)
    nodes.push(
      <span key="end" className="err-mark" data-testid="error-mark">
        {' '}
      </span>,
    );
  return nodes;
}

export function QueryEditor(props: QueryEditorProps) {
  const area = useRef<HTMLTextAreaElement>(null);
  const mirror = useRef<HTMLPreElement>(null);
  const [items, setItems] = useState<Item[]>([]);
  const [capped, setCapped] = useState(false);
  const [active, setActive] = useState(0);
  const asked = useRef(0);
  /** The list closes a moment after the focus leaves (a click on an item lands first), unless it comes back. */
  const blurTimer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const errorAt = props.error?.position ?? null;
  const nodes = useMemo(() => highlighted(props.value, errorAt), [props.value, errorAt]);

  const close = () => {
    asked.current++;
    setItems([]);
  };

  /** Looks at the word under the caret and fills the completion list (values are fetched, the latest ask wins). */
  const refresh = (text: string, caret: number, explicit: boolean) => {
    const s = completionAt(text, caret);
    const ask = ++asked.current;
    if (!s || (s.kind === 'field' && !s.prefix && !explicit)) {
      setItems([]);
      return;
    }
    setActive(0);
    // The list of the previous spot goes at once: a field list left open while values load would put `level:`
    // after `level:` on Tab.
    setItems((old) => (old.length && (old[0]!.kind !== s.kind || old[0]!.field !== s.field) ? [] : old));
    if (s.kind === 'field') {
      const p = s.prefix.toLowerCase();
      const starts = props.fields.filter((f) => f.name.toLowerCase().startsWith(p));
      const contains = props.fields.filter(
        (f) => !f.name.toLowerCase().startsWith(p) && f.name.toLowerCase().includes(p),
      );
      setItems(
        [...starts, ...contains]
          .slice(0, MAX_ITEMS)
          .map((f) => ({ label: f.name, insert: `${f.name}:`, detail: f.type, kind: 'field', field: '' })),
      );
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
        setItems(
          r.values.slice(0, MAX_ITEMS).map((v) => ({
            label: v.key,
            insert: `${quoteValue(v.key)} `,
            detail: String(v.count),
            kind: 'value',
            field: s.field,
          })),
        );
        setCapped(r.capped);
      },
      () => {
        if (ask === asked.current) setItems([]);
      },
    );
  };

  /**
   * Replaces what is typed before the caret with the item, reading the text and caret from the textarea itself (React's
   * copy may lag a fast typist by a keystroke). An item made for another spot than the caret's is not applied.
   */
  const accept = (it: Item) => {
    const el = area.current;
    if (!el) return;
    const text = el.value;
    const caret = el.selectionStart;
    const cur = completionAt(text, caret);
    if (!cur || cur.kind !== it.kind || (it.kind === 'value' && cur.field !== it.field)) {
      refresh(text, caret, false);
      return;
    }
    const next = text.slice(0, cur.start) + it.insert + text.slice(caret);
    const at = cur.start + it.insert.length;
    props.onChange(next);
    requestAnimationFrame(() => {
      el.focus();
      el.setSelectionRange(at, at);
      refresh(next, at, false);
    });
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    const open = items.length > 0;
    if (open && e.key === 'ArrowDown') {
      e.preventDefault();
      setActive((a) => (a + 1) % items.length);
      return;
    }
    if (open && e.key === 'ArrowUp') {
      e.preventDefault();
      setActive((a) => (a - 1 + items.length) % items.length);
      return;
    }
    // Tab (or a click) takes the highlighted item; Enter always runs the query as typed, list open or not.
    if (open && e.key === 'Tab') {
      e.preventDefault();
      accept(items[active]!);
      return;
    }
    if (e.key === 'Escape') {
      if (open) e.preventDefault();
      close();
      return;
    }
    if (e.key === ' ' && e.ctrlKey) {
      e.preventDefault();
      refresh(props.value, e.currentTarget.selectionStart, true);
      return;
    }
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
        <pre ref={mirror} className="editor-mirror" aria-hidden="true">
          {nodes}
          {'\n'}
        </pre>
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
          title="seq-ql: Enter runs the query, Tab takes a suggestion, Shift+Enter starts a new line, Ctrl+Space completes"
          value={props.value}
          onChange={(e) => {
            props.onChange(e.target.value);
            refresh(e.target.value, e.target.selectionStart, false);
          }}
          onKeyDown={onKeyDown}
          onBlur={() => {
            blurTimer.current = setTimeout(close, 150);
          }}
          onFocus={() => clearTimeout(blurTimer.current)}
        />
        {items.length > 0 && (
          <ul className="completions" id="query-completions" role="listbox" data-testid="completions">
            {items.map((it, i) => (
              <li
                key={it.label}
                role="option"
                aria-selected={i === active}
                className={i === active ? 'active' : undefined}
                onMouseDown={(e) => {
                  e.preventDefault();
                  accept(it);
                }}
              >
                <span className="c-label">{it.label}</span>
                <span className="c-detail">{it.detail}</span>
              </li>
            ))}
            {capped && (
              <li className="c-note" role="presentation">
                most frequent values only; type to narrow
              </li>
            )}
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
