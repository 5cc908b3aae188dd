/**
 * The manager's one list component (issue 43 item 4): a list page declares its columns (a header,
 * a cell for a row, the cell's class) and hands over its rows, an optional filter form and its
 * pager; the markup every list shares is written here once. That markup is what makes the lists
 * accessible and fit a phone, so keeping it in one place keeps every list the same: a named,
 * focusable region (TableRegion) holding a table whose header cells are `scope="col"` and whose
 * every cell carries its column's name as `data-label` (the card label at phone widths, MANAGER_CSS),
 * a caption when the list says how it is ordered or paged, the empty list said in words instead of
 * an empty table, and "First page" / "Next page" links that follow the API's cursors.
 */
import type { Child } from "hono/jsx";
import { Pager, TableRegion } from "./views";

/** One column: its header, the cell it shows for a row, and the cell's class (`lead`: first on a phone card). */
export interface Column<R> {
  header: string;
  cell: (row: R) => Child;
  /** The card label at phone widths when it differs from the header (e.g. "Attempt" for "#"); "" for none (links that say what they do). */
  label?: string;
  class?: string;
}

/** Where the next page is: the list's path, the cursor this page was asked with, the next page's (null on the last). */
export interface ListPager {
  path: string;
  current?: string | undefined;
  next: string | null;
}

export interface ListProps<R> {
  /** The region's name (a landmark: unique on its page) and the pager's. */
  label: string;
  columns: Column<R>[];
  rows: R[];
  /** Said above the header row: order, page size, what the list holds. */
  caption?: Child;
  /** Tables of many columns keep a minimum width beside the sidebar and scroll in their region between phone and desktop widths. */
  wide?: boolean;
  /** A further class for the table (e.g. the audit log's fixed column widths). */
  class?: string;
  /** What an empty list says instead of a table; null when the page says it elsewhere (with a link to create the first, say). */
  empty: string | null;
  /** A filter form, above the list. */
  filter?: Child;
  pager?: ListPager;
}

/** A list as a table of the declared columns, with its filter above it and its pager below. */
export function List<R>({ label, columns, rows, caption, wide, class: extra, empty, filter, pager }: ListProps<R>) {
  const classes = [wide ? "wide" : "", extra ?? ""].filter((c) => c !== "").join(" ");
  return (
    <>
      {filter}
      {rows.length === 0 ? (
        empty !== null && <p>{empty}</p>
      ) : (
        <TableRegion label={label}>
          <table class={classes === "" ? undefined : classes}>
            {caption !== undefined && <caption class="hint">{caption}</caption>}
            <thead>
              <tr>
                {columns.map((col) => (
                  <th scope="col">{col.header}</th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((row) => (
                <tr>
                  {columns.map((col) => (
                    <td data-label={col.label === "" ? undefined : (col.label ?? col.header)} class={col.class}>
                      {col.cell(row)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </TableRegion>
      )}
      {pager && <Pager label={label} path={pager.path} current={pager.current} next={pager.next} />}
    </>
  );
}
