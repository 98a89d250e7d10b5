/** The approval record is kept by the store (store/records); the domain reads it from there. */
export type { ApprovalDecision, ApprovalRecord, ApprovalStatus, ListApprovalsQuery, StoredPrincipal } from "../store/records/approval.js";
