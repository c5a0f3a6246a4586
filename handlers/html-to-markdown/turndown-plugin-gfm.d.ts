// @joplin/turndown-plugin-gfm ships no types; these are the exports the handler uses.
declare module '@joplin/turndown-plugin-gfm' {
  import type TurndownService from 'turndown'
  /** tables, strikethrough, task lists and highlighted code blocks */
  export const gfm: TurndownService.Plugin
  export const tables: TurndownService.Plugin
  export const strikethrough: TurndownService.Plugin
  export const taskListItems: TurndownService.Plugin
}
