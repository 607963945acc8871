// Command palette (Ctrl/Cmd+K): type to filter pages and pools, arrows to choose, Enter to go, Escape to close.
import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { PAGES, poolPath } from '../pages-list';
import { navigate } from '../router';
import { useEscape } from './use-escape';

export interface PaletteItem {
  label: string;
  hint: string;
  href: string;
}

export function paletteItems(pools: { database: string; user: string }[]): PaletteItem[] {
  return [
    ...PAGES.map((p) => ({ label: p.title, hint: p.description, href: p.path })),
    ...pools.map((p) => ({ label: `${p.database}/${p.user}`, hint: 'pool', href: poolPath(p.database, p.user) })),
  ];
}

/** Every word typed appears in the label or the hint. */
export function matchItems(items: PaletteItem[], text: string): PaletteItem[] {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  return items.filter((i) => words.every((w) => `${i.label} ${i.hint}`.toLowerCase().includes(w)));
}

export function Palette(props: { items: PaletteItem[]; onClose: () => void }) {
  const [text, setText] = useState('');
  const [index, setIndex] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const shown = useMemo(() => matchItems(props.items, text), [props.items, text]);
  useEscape(props.onClose);
  useEffect(() => input.current?.focus(), []);
  useEffect(() => setIndex(0), [text]);
  const go = (item: PaletteItem | undefined) => {
    if (!item) return;
    props.onClose();
    navigate(item.href);
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      setIndex((i) => Math.min(shown.length - 1, i + 1));
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      setIndex((i) => Math.max(0, i - 1));
    } else if (e.key === 'Enter') {
      e.preventDefault();
      go(shown[index]);
    }
  };
  return (
    <div className="modal-backdrop palette-backdrop" onClick={props.onClose}>
      <div
        className="modal palette"
        role="dialog"
        aria-modal="true"
        aria-label="Go to a page or a pool"
        onClick={(e) => e.stopPropagation()}
      >
        <input
          ref={input}
          role="combobox"
          aria-expanded="true"
          aria-controls="palette-list"
          aria-activedescendant={shown[index] ? `palette-${index}` : undefined}
          aria-label="Page or pool"
          placeholder="Page or pool…"
          value={text}
          onChange={(e) => setText(e.target.value)}
          onKeyDown={onKey}
        />
        <ul id="palette-list" role="listbox" aria-label="Matches">
          {shown.map((item, i) => (
            <li
              key={item.href}
              id={`palette-${i}`}
              role="option"
              aria-selected={i === index}
              className={i === index ? 'selected' : undefined}
              onMouseEnter={() => setIndex(i)}
              onClick={() => go(item)}
            >
              <span className="label">{item.label}</span> <span className="hint">{item.hint}</span>
            </li>
          ))}
          {shown.length === 0 && (
            <li className="muted" role="presentation">
              Nothing matches.
            </li>
          )}
        </ul>
      </div>
    </div>
  );
}
