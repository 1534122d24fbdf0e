// Reads typed fields of data from openapi-typescript's types of deskkit's
// document: a trash search's total and first entry, the current user's
// name, a channel list. It compiles (tsc --noEmit) only if each
// operation's data is exactly its own schema's type, not that type mixed
// with a catch-all; it runs nowhere.
import type { components, paths } from "./deskkit";

type OK<P extends keyof paths, M extends keyof paths[P]> = paths[P][M] extends {
  responses: { 200: { content: { "application/json": infer B } } };
}
  ? B
  : never;

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;

type Search = OK<"/api/v1/task/trash/search", "get">;
type User = OK<"/api/v1/user/current", "get">;
type Channels = OK<"/api/v1/event/channel", "get">;

export const exact: [
  Equals<Search["data"], components["schemas"]["TrashPage"]>,
  Equals<User["data"], components["schemas"]["UserDetail"]>,
  Equals<Channels["data"], components["schemas"]["Channel"][]>,
] = [true, true, true];

export function summary(search: Search, user: User, channels: Channels): string {
  const total: number = search.data.total;
  const first: string | undefined = search.data.list[0]?.targetName;
  const name: string = user.data.username;
  const names: string[] = channels.data.map((c) => c.name);
  return `${total} ${first ?? ""} ${name} ${names.join(",")}`;
}
