// The role the server gave this browser (admin, sso, anonymous) and a way for pages to ask for sign-in.
import { createContext, useContext } from 'react';

export type Role = 'admin' | 'sso' | 'anonymous';

export interface RoleInfo {
  role: Role;
  requestSignIn: (reason: string) => void;
}

export const RoleContext = createContext<RoleInfo>({ role: 'anonymous', requestSignIn: () => undefined });

export function useRole(): RoleInfo {
  return useContext(RoleContext);
}
