"""The bank the notebook shows (two customers, one account) and the rules its runs break."""

from __future__ import annotations


class Account:
    """A bank account two customers share."""

    def __init__(self, balance):
        self.balance = balance
        self.paid = {}


def withdraw(account, amount):
    """Pay out `amount` if the balance covers it; return what was paid."""
    if account.balance >= amount:
        account.balance -= amount
        return amount
    return 0


def alice(account):
    account.paid["alice"] = withdraw(account, 60)


def bob(account):
    account.paid["bob"] = withdraw(account, 60)


def open_account():
    return Account(100)


def never_overdrawn(account):
    """The bank's first rule: the balance never goes below zero."""
    assert account.balance >= 0, f"the balance ended at {account.balance}"


def money_conserved(account):
    """The bank's second rule: what was paid out plus what is left is what the account held."""
    paid = sum(account.paid.values())
    assert account.balance + paid == 100, (
        f"paid out {paid} and {account.balance} is left: {account.balance + paid} in all, "
        "but the account held 100")


def _overdrawn(account: Account) -> None:
    """Holds exactly when the run broke the first rule (used to grade OVERDRAFT)."""
    assert account.balance < 0


def _money_made(account: Account) -> None:
    """Holds exactly when the run broke the second rule but not the first (DOUBLE_PAY)."""
    assert account.balance >= 0 and account.balance + sum(account.paid.values()) > 100
