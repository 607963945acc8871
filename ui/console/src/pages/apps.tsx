// Apps: one row per application_name with clients, rates and errors per 1 000 queries, each linking to its clients.
import type { Row } from '../api';
import { DataTable, withExtraColumns, type Column } from '../components/data-table';
import { Empty, Gate } from '../components/states';
import { bytes, count, micros, rate } from '../format';
import { linkProps } from '../router';
import { usePolling } from '../use-polling';

export const clientsOfApp = (name: string) => `/clients?${new URLSearchParams({ application_name: name }).toString()}`;

const APP_COLUMNS: Column[] = [
  { key: 'application_name', label: 'application', render: (r) => String(r['application_name']) || '(none)' },
  { key: 'clients', help: 'clients', num: true, live: true },
  { key: 'cl_active', num: true, live: true },
  { key: 'cl_waiting', num: true, live: true },
  { key: 'qps', label: 'Q/s', num: true, live: true, render: (r) => rate(r['qps']) },
  { key: 'tps', label: 'Tx/s', num: true, live: true, render: (r) => rate(r['tps']) },
  {
    key: 'errors_per_1000',
    label: 'errors / 1 000 q',
    help: 'app_errors',
    num: true,
    live: true,
    render: (r) => rate(r['errors_per_1000']),
  },
  {
    key: 'query_count',
    label: 'queries',
    help: 'total_query_count',
    num: true,
    live: true,
    render: (r) => count(r['query_count']),
  },
  {
    key: 'xact_count',
    label: 'transactions',
    help: 'total_xact_count',
    num: true,
    live: true,
    render: (r) => count(r['xact_count'] ?? r['transaction_count']),
  },
  {
    key: 'error_count',
    label: 'errors',
    help: 'total_errors',
    num: true,
    live: true,
    render: (r) => count(r['error_count']),
  },
  {
    key: 'bytes_received',
    label: 'received',
    help: 'bytes',
    num: true,
    live: true,
    render: (r) => bytes(r['bytes_received']),
  },
  { key: 'bytes_sent', label: 'sent', help: 'bytes', num: true, live: true, render: (r) => bytes(r['bytes_sent']) },
  {
    key: 'query_time_us',
    label: 'query time',
    help: 'avg_query_time',
    num: true,
    live: true,
    render: (r) => micros(r['query_time_us']),
  },
  {
    key: 'link',
    label: '',
    sortable: false,
    render: (r) => <a {...linkProps(clientsOfApp(String(r['application_name'])))}>clients →</a>,
  },
];

export function AppsPage() {
  const polled = usePolling<Row[]>('/api/apps');
  return (
    <section aria-labelledby="apps-title">
      <h1 id="apps-title">Apps</h1>
      <Gate loading={polled.loading} error={polled.error} hasData={polled.data !== null} what="applications">
        {() => (
          <DataTable
            caption="Traffic per application_name"
            testId="apps-table"
            rows={polled.data!}
            columns={withExtraColumns(APP_COLUMNS, polled.data!, ['cl_idle', 'transaction_count', 'xact_time_us'])}
            rowKey={(r) => String(r['application_name'])}
            defaultSort={{ key: 'clients', order: 'desc' }}
            empty={
              <Empty testId="apps-empty">
                No applications yet: rows appear as clients connect (each client's <code>application_name</code>).
              </Empty>
            }
          />
        )}
      </Gate>
    </section>
  );
}
