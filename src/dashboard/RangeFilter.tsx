import { useState } from "preact/hooks";
import type { IndexInfo } from "./adminTypes.js";
import { ErrorLine } from "./ErrorLine.js";
import { emptyDraft, pageQueryOf, prefixLength, type FilterDraft, type PageQuery } from "./pageQuery.js";

interface RangeFilterProps {
  readonly indexes: readonly IndexInfo[];
  readonly initial: FilterDraft;
  readonly onApply: (query: PageQuery, draft: FilterDraft) => void;
}

/**
 * Sort and filter by an index: pick the index and the order; type JSON values for a
 * prefix of its fields (equality) and bounds on the field after them. Nothing changes
 * until "Apply", and a draft that does not parse shows why beside the form.
 */
export function RangeFilter({ indexes, initial, onApply }: RangeFilterProps) {
  const [draft, setDraft] = useState(initial);
  const [error, setError] = useState<unknown>(null);
  const index = indexes.find((candidate) => candidate.name === draft.index);
  const fields = index?.fields ?? [];
  const prefix = prefixLength(draft);
  const boundField = fields[prefix];
  const update = (change: Partial<FilterDraft>) => setDraft((previous) => ({ ...previous, ...change }));
  const apply = (next: FilterDraft) => {
    try {
      onApply(pageQueryOf(next, indexes.find((candidate) => candidate.name === next.index)), next);
      setError(null);
    } catch (problem) {
      setError(problem);
    }
  };

  return (
    <form
      class="filter"
      data-testid="range-filter"
      onSubmit={(event) => {
        event.preventDefault();
        apply(draft);
      }}
    >
      <label>
        Index
        <select
          data-testid="filter-index"
          value={draft.index}
          onChange={(event) => {
            const next = emptyDraft(event.currentTarget.value, draft.order);
            setDraft(next);
            apply(next);
          }}
        >
          {indexes.map((candidate) => (
            <option key={candidate.name} value={candidate.name}>
              {candidate.name} ({candidate.fields.join(", ")})
            </option>
          ))}
        </select>
      </label>
      <label>
        Order
        <select
          data-testid="filter-order"
          value={draft.order}
          onChange={(event) => {
            const next = { ...draft, order: event.currentTarget.value as "asc" | "desc" };
            setDraft(next);
            apply(next);
          }}
        >
          <option value="asc">ascending</option>
          <option value="desc">descending</option>
        </select>
      </label>
      {fields.map((field, position) => (
        <label key={`${draft.index}:${field}`} class="json-field">
          {field} =
          <input
            data-testid={`filter-eq-${field}`}
            placeholder="any (JSON)"
            value={draft.eqTexts[position] ?? ""}
            onInput={(event) => {
              const eqTexts = [...draft.eqTexts];
              while (eqTexts.length <= position) eqTexts.push("");
              eqTexts[position] = event.currentTarget.value;
              update({ eqTexts });
            }}
          />
        </label>
      ))}
      {boundField !== undefined && (
        <span class="bounds">
          <label class="json-field">
            {boundField} {draft.lowerInclusive ? "≥" : ">"}
            <input data-testid="filter-lower" placeholder="JSON" value={draft.lowerText} onInput={(event) => update({ lowerText: event.currentTarget.value })} />
          </label>
          <label class="check" title="include the lower bound">
            <input type="checkbox" checked={draft.lowerInclusive} onChange={(event) => update({ lowerInclusive: event.currentTarget.checked })} />
            incl.
          </label>
          <label class="json-field">
            {boundField} {draft.upperInclusive ? "≤" : "<"}
            <input data-testid="filter-upper" placeholder="JSON" value={draft.upperText} onInput={(event) => update({ upperText: event.currentTarget.value })} />
          </label>
          <label class="check" title="include the upper bound">
            <input type="checkbox" checked={draft.upperInclusive} onChange={(event) => update({ upperInclusive: event.currentTarget.checked })} />
            incl.
          </label>
        </span>
      )}
      <span class="actions">
        <button type="submit" data-testid="filter-apply">
          Apply
        </button>
        <button
          type="button"
          onClick={() => {
            const next = emptyDraft(draft.index, draft.order);
            setDraft(next);
            apply(next);
          }}
        >
          Clear
        </button>
      </span>
      <ErrorLine error={error} testId="filter-error" />
    </form>
  );
}
