// PostgreSQL wire protocol codes: message type bytes, protocol versions, auth request codes, SQLSTATEs.

/** Messages a frontend (client) sends. */
export const enum FrontendMessage {
  Bind = 0x42, // B
  Close = 0x43, // C
  CopyData = 0x64, // d
  CopyDone = 0x63, // c
  CopyFail = 0x66, // f
  Describe = 0x44, // D
  Execute = 0x45, // E
  Flush = 0x48, // H
  FunctionCall = 0x46, // F
  Parse = 0x50, // P
  Password = 0x70, // p (also SASLInitialResponse, SASLResponse, GSSResponse)
  Query = 0x51, // Q
  Sync = 0x53, // S
  Terminate = 0x58, // X
}

/** Messages a backend (server) sends. */
export const enum BackendMessage {
  Authentication = 0x52, // R
  BackendKeyData = 0x4b, // K
  BindComplete = 0x32, // 2
  CloseComplete = 0x33, // 3
  CommandComplete = 0x43, // C
  CopyData = 0x64, // d
  CopyDone = 0x63, // c
  CopyInResponse = 0x47, // G
  CopyOutResponse = 0x48, // H
  CopyBothResponse = 0x57, // W
  DataRow = 0x44, // D
  EmptyQueryResponse = 0x49, // I
  ErrorResponse = 0x45, // E
  NegotiateProtocolVersion = 0x76, // v
  NoData = 0x6e, // n
  NoticeResponse = 0x4e, // N
  NotificationResponse = 0x41, // A
  ParameterDescription = 0x74, // t
  ParameterStatus = 0x53, // S
  ParseComplete = 0x31, // 1
  PortalSuspended = 0x73, // s
  ReadyForQuery = 0x5a, // Z
  RowDescription = 0x54, // T
}

/** Transaction status byte of ReadyForQuery. */
export const enum TxStatus {
  Idle = 0x49, // I
  InTransaction = 0x54, // T
  Failed = 0x45, // E
}

export const PROTOCOL_3_0 = 196608; // 3 << 16
export const PROTOCOL_3_2 = 196610; // 3 << 16 | 2
export const SSL_REQUEST = 80877103;
export const GSSENC_REQUEST = 80877104;
export const CANCEL_REQUEST = 80877102;

export const enum AuthRequest {
  Ok = 0,
  CleartextPassword = 3,
  MD5Password = 5,
  SASL = 10,
  SASLContinue = 11,
  SASLFinal = 12,
}

/** SQLSTATE codes the pooler sends. */
export const SqlState = {
  ProtocolViolation: '08P01',
  ConnectionFailure: '08006',
  ConnectionException: '08000',
  InvalidPassword: '28P01',
  InvalidAuthorization: '28000',
  InvalidCatalogName: '3D000',
  TooManyConnections: '53300',
  AdminShutdown: '57P01',
  QueryCanceled: '57014',
  FeatureNotSupported: '0A000',
  SyntaxError: '42601',
  InternalError: 'XX000',
  ObjectNotFound: '42704',
  InvalidParameterValue: '22023',
} as const;
export type SqlStateCode = (typeof SqlState)[keyof typeof SqlState];
