// Names of the SQLSTATEs an operator meets most (PostgreSQL Appendix A), else of their class (first two characters).
const CODES: Record<string, string> = {
  '08006': 'connection_failure', '08001': 'sqlclient_unable_to_establish_sqlconnection', '08P01': 'protocol_violation',
  '22012': 'division_by_zero', '22P02': 'invalid_text_representation', '22001': 'string_data_right_truncation',
  '23502': 'not_null_violation', '23503': 'foreign_key_violation', '23505': 'unique_violation', '23514': 'check_violation',
  '25P02': 'in_failed_sql_transaction', '28000': 'invalid_authorization_specification', '28P01': 'invalid_password',
  '3D000': 'invalid_catalog_name', '40001': 'serialization_failure', '40P01': 'deadlock_detected',
  '42501': 'insufficient_privilege', '42601': 'syntax_error', '42703': 'undefined_column', '42883': 'undefined_function',
  '42P01': 'undefined_table', '53300': 'too_many_connections', '55P03': 'lock_not_available', '57014': 'query_canceled',
  '57P01': 'admin_shutdown', '57P03': 'cannot_connect_now', 'XX000': 'internal_error',
};

const CLASSES: Record<string, string> = {
  '08': 'connection exception', '0A': 'feature not supported', '21': 'cardinality violation', '22': 'data exception',
  '23': 'integrity constraint violation', '24': 'invalid cursor state', '25': 'invalid transaction state',
  '26': 'invalid SQL statement name', '28': 'invalid authorization', '2B': 'dependent privilege descriptors still exist',
  '34': 'invalid cursor name', '3D': 'invalid catalog name', '3F': 'invalid schema name', '40': 'transaction rollback',
  '42': 'syntax error or access rule violation', '53': 'insufficient resources', '54': 'program limit exceeded',
  '55': 'object not in prerequisite state', '57': 'operator intervention', '58': 'system error', 'P0': 'PL/pgSQL error',
  'XX': 'internal error',
};

export function sqlStateName(code: string): string {
  if (code === 'other') return 'past the 32 codes a pool keeps, or without a code';
  return CODES[code] ?? (CLASSES[code.slice(0, 2)] ? `class ${code.slice(0, 2)}: ${CLASSES[code.slice(0, 2)]}` : '');
}
