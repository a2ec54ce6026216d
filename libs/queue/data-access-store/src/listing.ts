/** A page of a listing; `cursor` is absent on the last page (the SDK tests expect undefined). */
export interface Page<T> {
  items: T[];
  cursor?: string;
}

/** How many stored entries one listing call reads at most while filtering. */
export const SCAN_LIMIT = 10_000;
