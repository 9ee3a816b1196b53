/**
 * The tickets the demo processes, and what the mock "model" answers for each of them. The mock
 * provider server has no model: it reads the ticket id and the prompt id from the request it
 * receives and answers with the values below, in the wire format of whichever provider was called.
 */

/** A tenant and where its data may go. */
export interface Tenant {
  readonly id: string
  /** Regions this tenant's data may be processed in (a contract term): sent with every command. */
  readonly regions?: readonly [string, ...Array<string>]
}

export const tenants = {
  acme: { id: "acme" },
  /** EU-only contract: every command of this tenant carries `regions: ["eu"]`. */
  globex: { id: "globex", regions: ["eu"] }
} as const satisfies Record<string, Tenant>

export type Category = "billing" | "technical" | "shipping" | "account" | "other"

export interface Ticket {
  readonly id: string
  readonly tenant: Tenant
  readonly customer: string
  readonly subject: string
  readonly body: string
  /** Whether the assistant should schedule a follow-up task (ticket.followUp). */
  readonly followUp: boolean
  /** What the mock model answers. */
  readonly model: {
    readonly classification: { readonly category: Category; readonly confidence: number }
    readonly fields: {
      readonly orderId: string | null
      readonly product: string | null
      readonly needsManualEntry: boolean
    }
    readonly reply: string
    readonly task?: { readonly title: string; readonly dueInDays: number }
  }
}

export const tickets: ReadonlyArray<Ticket> = [
  {
    id: "T-1001",
    tenant: tenants.acme,
    customer: "Dana",
    subject: "Charged twice for my March invoice",
    body: "Hi, my card was charged twice for order ORD-482913 (Pro plan, annual). Please refund one of the payments.",
    followUp: false,
    model: {
      classification: { category: "billing", confidence: 0.94 },
      fields: { orderId: "ORD-482913", product: "Pro plan", needsManualEntry: false },
      reply:
        "Hi Dana, sorry about the double charge on order ORD-482913. I have asked our billing team to refund the duplicate payment; you will see it on your card within 5 business days."
    }
  },
  {
    id: "T-1002",
    tenant: tenants.globex,
    customer: "Jonas",
    subject: "Export to PDF crashes the app",
    body: "Since yesterday's update the desktop app (Studio 4.2) closes as soon as I export a report to PDF. Nothing was ordered, it's our company licence.",
    followUp: false,
    model: {
      classification: { category: "technical", confidence: 0.88 },
      fields: { orderId: null, product: "Studio 4.2", needsManualEntry: false },
      reply:
        "Hi Jonas, thanks for the report. This is a known issue in Studio 4.2 and version 4.2.1, released today, fixes it. Until you can update, exporting to PNG first works as a workaround."
    }
  },
  {
    id: "T-1003",
    tenant: tenants.acme,
    customer: "Priya",
    subject: "Headphones never arrived",
    body: "I ordered the Aria headphones two weeks ago (ORD-771204) and tracking hasn't moved since. Can someone call me back on Monday?",
    followUp: true,
    model: {
      classification: { category: "shipping", confidence: 0.91 },
      fields: { orderId: "ORD-771204", product: "Aria headphones", needsManualEntry: false },
      reply:
        "Hi Priya, I am sorry your Aria headphones (ORD-771204) are late. I have opened an investigation with the carrier and scheduled a call back for Monday.",
      task: { title: "Call Priya back about ORD-771204 (carrier investigation)", dueInDays: 3 }
    }
  },
  {
    id: "T-1004",
    tenant: tenants.globex,
    customer: "Marta",
    subject: "Please close my account",
    body: "We are moving to another tool. Please close our account and confirm in writing that our data has been deleted.",
    followUp: true,
    model: {
      classification: { category: "account", confidence: 0.83 },
      fields: { orderId: null, product: null, needsManualEntry: false },
      reply:
        "Hi Marta, we are sorry to see you go. I have started the account closure; you will receive a written confirmation of the data deletion within 30 days.",
      task: { title: "Confirm data deletion to Marta in writing", dueInDays: 30 }
    }
  }
]

/** The user message of a ticket (the mock server finds the ticket by the `Ticket T-…` line). */
export const ticketText = (ticket: Ticket): string =>
  `Ticket ${ticket.id} from ${ticket.customer}\nSubject: ${ticket.subject}\n\n${ticket.body}`

/** Finds the ticket a request is about. */
export const ticketIn = (text: string): Ticket | undefined => {
  const m = /Ticket (T-\d+)/.exec(text)
  return m === null ? undefined : tickets.find((t) => t.id === m[1])
}
