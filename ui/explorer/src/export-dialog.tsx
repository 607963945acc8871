// Export of the current query: JSON lines (whole documents or chosen fields) or CSV (chosen fields), downloaded as a file.
import { useState } from 'react';
import { ApiError } from './api';

export interface ExportDialogProps {
  query: string;
  from: string;
  to: string;
  total: number;
  maxExport: number;
  columns: string[];
  fieldNames: string[];
  onClose: () => void;
}

export function ExportDialog(props: ExportDialogProps) {
  const [format, setFormat] = useState<'jsonl' | 'csv'>('jsonl');
  const [fields, setFields] = useState((props.columns.length ? ['_time', ...props.columns] : []).join(', '));
  const [limit, setLimit] = useState(String(Math.min(props.total, props.maxExport)));
  const [busy, setBusy] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);

  const start = async () => {
    const list = fields
      .split(',')
      .map((f) => f.trim())
      .filter(Boolean);
    if (format === 'csv' && list.length === 0)
      return setProblem("A CSV export needs its columns: list the fields (_id and _time are the event's own).");
    const n = Number(limit);
    if (!Number.isInteger(n) || n <= 0) return setProblem('The number of documents is a positive whole number.');
    setBusy(true);
    setProblem(null);
    try {
      const res = await fetch('/api/v1/export', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          query: props.query,
          from: props.from,
          to: props.to,
          limit: n,
          format,
          ...(list.length ? { fields: list } : {}),
        }),
      });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { error?: { message?: string; code?: string } };
        throw new ApiError(res.status, body.error?.code ?? 'error', body.error?.message ?? `HTTP ${res.status}`, {});
      }
      const blob = await res.blob();
      const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? `export.${format}`;
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
      props.onClose();
    } catch (err) {
      setProblem((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div
      className="modal-back"
      onMouseDown={(e) => {
        if (e.target === e.currentTarget) props.onClose();
      }}
    >
      <form
        className="modal small"
        role="dialog"
        aria-modal="true"
        aria-labelledby="export-title"
        data-testid="export"
        onSubmit={(e) => {
          e.preventDefault();
          void start();
        }}
      >
        <div className="modal-head">
          <h2 id="export-title">Export {props.total.toLocaleString('en-US')} matches</h2>
          <button type="button" aria-label="Close the export" onClick={props.onClose}>
            ×
          </button>
        </div>
        <fieldset className="export-format">
          <legend>Format</legend>
          <label>
            <input type="radio" name="format" checked={format === 'jsonl'} onChange={() => setFormat('jsonl')} /> JSON
            lines
          </label>
          <label>
            <input
              type="radio"
              name="format"
              data-testid="export-csv"
              checked={format === 'csv'}
              onChange={() => {
                setFormat('csv');
                if (!fields) setFields(['_time', ...props.fieldNames.filter((f) => f !== 'timestamp')].join(', '));
              }}
            />{' '}
            CSV
          </label>
        </fieldset>
        <label className="stack">
          Fields ({format === 'jsonl' ? 'empty: whole documents' : 'the columns, in order'})
          <input
            data-testid="export-fields"
            value={fields}
            onChange={(e) => setFields(e.target.value)}
            placeholder="_time, service, message"
          />
        </label>
        <label className="stack">
          Documents (at most {props.maxExport.toLocaleString('en-US')})
          <input
            data-testid="export-limit"
            value={limit}
            onChange={(e) => setLimit(e.target.value)}
            inputMode="numeric"
          />
        </label>
        {problem && (
          <p className="banner bad" role="alert" data-testid="export-problem">
            {problem}
          </p>
        )}
        <div className="modal-foot">
          <button type="submit" className="primary" data-testid="export-start" disabled={busy}>
            {busy ? 'Exporting…' : 'Download'}
          </button>
        </div>
      </form>
    </div>
  );
}
