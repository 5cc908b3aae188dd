/**
 * The GraphQL abuse limits that are checked on the parsed document before validation and
 * execution, so an abusive document costs a bounded, small amount of work and is never run:
 * data fields as executed (fragment spreads counted at every use, aliases included), selection
 * depth, argument values nested too deeply, and how many fields the document's introspection
 * (`__schema`, `__type`) returns. The schema is static, so introspection's answer size is
 * computed exactly over it rather than estimated: one standard introspection query passes,
 * forty aliased copies of it do not. Every walk here is bounded (by the counts it enforces or
 * by the token limit of the parser), and fragment cycles are skipped (validation reports them).
 */
import {
  BREAK,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLArgument,
  type GraphQLDirective,
  type GraphQLField,
  type GraphQLInputField,
  type GraphQLSchema,
  type GraphQLType,
  isAbstractType,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isListType,
  isNonNullType,
  isObjectType,
  Kind,
  type SelectionSetNode,
  visit,
} from "graphql";
import { MAX_JSON_DEPTH } from "../lib/json";

/** Documented limits (docs/api.md, "GraphQL"). */
export const GRAPHQL_LIMITS = {
  /** Characters in the query document. */
  maxDocumentLength: 10_000,
  /** Lexical tokens; parsing stops beyond this. */
  maxTokens: 2_000,
  /** Nesting of data selections below the operation. */
  maxDepth: 8,
  /** Data fields as executed: aliases included, a fragment's fields counted at every spread. */
  maxFields: 200,
  /** Fields the document's introspection returns (the standard introspection query with every option: about 3,700). */
  maxIntrospectionFields: 5_000,
  /** Selections (fields, fragments) visited to count them, across the whole document. */
  maxIntrospectionSteps: 20_000,
  /** Nesting of object and list values in arguments, as for JSON bodies. */
  maxValueDepth: MAX_JSON_DEPTH,
} as const;

const isIntrospectionRoot = (name: string) => name === "__schema" || name === "__type";

/** The first limit the document exceeds, as a message for the caller; null when within all. */
export function checkDocumentLimits(schema: GraphQLSchema, document: DocumentNode): string | null {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);

  if (valuesTooDeep(document)) {
    return `An argument value nests objects and lists deeper than ${GRAPHQL_LIMITS.maxValueDepth} levels.`;
  }
  const budget: Budget = { steps: 0 };
  const measure = measurer(schema, fragments, budget);
  let fields = 0;
  let introspection = 0;
  for (const d of document.definitions) {
    if (d.kind !== Kind.OPERATION_DEFINITION) continue;
    const m = measure(d.selectionSet);
    fields += m.fields;
    introspection += m.introspection;
    if (m.depth > GRAPHQL_LIMITS.maxDepth) return `The query is ${m.depth} levels deep; the limit is ${GRAPHQL_LIMITS.maxDepth}.`;
  }
  if (fields > GRAPHQL_LIMITS.maxFields) {
    return `The query selects ${fields} fields (aliases included); the limit is ${GRAPHQL_LIMITS.maxFields}.`;
  }
  if (introspection > GRAPHQL_LIMITS.maxIntrospectionFields) {
    return `The query's introspection returns more than ${GRAPHQL_LIMITS.maxIntrospectionFields} fields; the limit is ${GRAPHQL_LIMITS.maxIntrospectionFields}.`;
  }
  if (budget.steps > GRAPHQL_LIMITS.maxIntrospectionSteps) {
    return `The query's introspection is too complex to evaluate (more than ${GRAPHQL_LIMITS.maxIntrospectionSteps} selections to visit).`;
  }
  return null;
}

/** Object and list values nested deeper than maxValueDepth anywhere (graphql's visit is iterative). */
function valuesTooDeep(document: DocumentNode): boolean {
  let depth = 0;
  let tooDeep = false;
  const nest = {
    enter: () => {
      if (++depth > GRAPHQL_LIMITS.maxValueDepth) {
        tooDeep = true;
        return BREAK;
      }
      return undefined;
    },
    leave: () => {
      depth--;
    },
  };
  visit(document, { ObjectValue: nest, ListValue: nest });
  return tooDeep;
}

interface Measure {
  /** Data fields as executed. */
  fields: number;
  /** Deepest data selection. */
  depth: number;
  /** Fields returned by introspection, each walk capped just above the limit. */
  introspection: number;
}

const NOTHING: Measure = { fields: 0, depth: 0, introspection: 0 };

/**
 * Measures selection sets; a fragment is measured once and its measure reused at every spread,
 * so counts are exact however often fragments are spread, in time linear in the document.
 */
/** Work spent on introspection so far, shared by every walk of the document. */
interface Budget {
  steps: number;
}

function measurer(schema: GraphQLSchema, fragments: Map<string, FragmentDefinitionNode>, budget: Budget) {
  const done = new Map<string, Measure>();
  const active = new Set<string>();

  const measure = (set: SelectionSetNode): Measure => {
    let fields = 0;
    let depth = 0;
    let introspection = 0;
    for (const s of set.selections) {
      let m: Measure;
      if (s.kind === Kind.FIELD) {
        if (isIntrospectionRoot(s.name.value)) {
          introspection += introspectionFields(schema, fragments, s, budget);
          continue;
        }
        const inner = s.selectionSet ? measure(s.selectionSet) : NOTHING;
        m = { fields: 1 + inner.fields, depth: 1 + inner.depth, introspection: inner.introspection };
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        m = measure(s.selectionSet);
      } else {
        m = spread(s.name.value);
      }
      fields += m.fields;
      depth = Math.max(depth, m.depth);
      introspection += m.introspection;
    }
    return { fields, depth, introspection };
  };

  const spread = (name: string): Measure => {
    const known = done.get(name);
    if (known !== undefined) return known;
    const fragment = fragments.get(name);
    // Unknown fragments and cycles are validation errors; they add nothing here.
    if (fragment === undefined || active.has(name)) return NOTHING;
    active.add(name);
    const m = measure(fragment.selectionSet);
    active.delete(name);
    done.set(name, m);
    return m;
  };

  return measure;
}

// ---------------------------------------------------------------------------------------------
// Introspection, counted over the schema itself (GraphQL spec section 4.2 "Schema Introspection")

type Meta =
  | { kind: "schema" }
  | { kind: "type"; type: GraphQLType }
  | { kind: "field"; field: GraphQLField<unknown, unknown> }
  | { kind: "inputValue"; value: GraphQLArgument | GraphQLInputField }
  | { kind: "enumValue" }
  | { kind: "directive"; directive: GraphQLDirective };

const typeMeta = (type: GraphQLType): Meta => ({ kind: "type", type });
const inputMeta = (value: GraphQLArgument | GraphQLInputField): Meta => ({ kind: "inputValue", value });

/** The objects a field of an introspection object returns, or null for a scalar field. */
function children(schema: GraphQLSchema, node: Meta, field: string): Meta[] | null {
  switch (node.kind) {
    case "schema":
      if (field === "types") return Object.values(schema.getTypeMap()).map(typeMeta);
      if (field === "directives") return schema.getDirectives().map((directive) => ({ kind: "directive", directive }));
      if (field === "queryType") return [schema.getQueryType()].flatMap((t) => (t ? [typeMeta(t)] : []));
      if (field === "mutationType") return [schema.getMutationType()].flatMap((t) => (t ? [typeMeta(t)] : []));
      if (field === "subscriptionType") return [schema.getSubscriptionType()].flatMap((t) => (t ? [typeMeta(t)] : []));
      return null;
    case "type": {
      const t = node.type;
      const composite = isObjectType(t) || isInterfaceType(t);
      if (field === "fields") return composite ? Object.values(t.getFields()).map((f) => ({ kind: "field", field: f })) : [];
      if (field === "interfaces") return composite ? t.getInterfaces().map(typeMeta) : [];
      if (field === "possibleTypes") return isAbstractType(t) ? schema.getPossibleTypes(t).map(typeMeta) : [];
      if (field === "enumValues") return isEnumType(t) ? t.getValues().map((): Meta => ({ kind: "enumValue" })) : [];
      if (field === "inputFields") return isInputObjectType(t) ? Object.values(t.getFields()).map(inputMeta) : [];
      if (field === "ofType") return isListType(t) || isNonNullType(t) ? [typeMeta(t.ofType)] : [];
      return null;
    }
    case "field":
      if (field === "args") return node.field.args.map(inputMeta);
      if (field === "type") return [typeMeta(node.field.type)];
      return null;
    case "inputValue":
      return field === "type" ? [typeMeta(node.value.type)] : null;
    case "directive":
      return field === "args" ? node.directive.args.map(inputMeta) : null;
    case "enumValue":
      return null;
  }
}

/**
 * How many fields one `__schema` or `__type` selection returns, stopping just above the limit.
 * Every selection visited (fields, inline fragments, spreads: a fragment is re-walked at every
 * spread, since what it returns depends on where) spends one step of the document's shared
 * budget, so no document, however its fragments nest, makes this walk more than
 * maxIntrospectionSteps long. Type conditions of fragments are not checked, which can only
 * over-count.
 */
function introspectionFields(
  schema: GraphQLSchema,
  fragments: Map<string, FragmentDefinitionNode>,
  root: FieldNode,
  budget: Budget,
): number {
  const cap = GRAPHQL_LIMITS.maxIntrospectionFields + 1;
  let count = 0;
  const active = new Set<string>();
  const walk = (selections: SelectionSetNode, node: Meta): void => {
    for (const s of selections.selections) {
      if (count >= cap || ++budget.steps > GRAPHQL_LIMITS.maxIntrospectionSteps) return;
      if (s.kind === Kind.FIELD) {
        count++;
        const kids = s.selectionSet ? children(schema, node, s.name.value) : null;
        if (kids !== null && s.selectionSet) for (const kid of kids) walk(s.selectionSet, kid);
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        walk(s.selectionSet, node);
      } else {
        const fragment = fragments.get(s.name.value);
        if (fragment === undefined || active.has(s.name.value)) continue;
        active.add(s.name.value);
        walk(fragment.selectionSet, node);
        active.delete(s.name.value);
      }
    }
  };

  const start = (nodes: Meta[]): number => {
    count = 1; // the root field itself
    if (root.selectionSet) for (const node of nodes) walk(root.selectionSet, node);
    return Math.min(count, cap);
  };
  if (root.name.value === "__schema") return start([{ kind: "schema" }]);
  // __type(name:): the named type; with a variable, the largest answer any type would give.
  const name = root.arguments?.find((a) => a.name.value === "name")?.value;
  if (name?.kind === Kind.STRING) {
    const type = schema.getType(name.value);
    return start(type ? [typeMeta(type)] : []);
  }
  let largest = 1;
  for (const type of Object.values(schema.getTypeMap())) largest = Math.max(largest, start([typeMeta(type)]));
  return largest;
}
