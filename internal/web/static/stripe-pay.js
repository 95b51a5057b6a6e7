// stripe-pay.js mounts Stripe's card field (Stripe Elements) on the
// payment page and, on Pay, has Stripe turn the card into a PaymentMethod
// whose id the form then sends: the card number goes to Stripe only.
(function () {
  "use strict";
  var form = document.getElementById("stripe-pay");
  if (!form || !window.Stripe) {
    return;
  }
  var stripe = window.Stripe(form.getAttribute("data-pk"));
  var card = stripe.elements().create("card");
  card.mount("#card-element");
  var errors = document.getElementById("card-errors");
  var button = form.querySelector("button[type=submit]");
  form.addEventListener("submit", function (ev) {
    if (form.elements.token.value) {
      return;
    }
    ev.preventDefault();
    button.disabled = true;
    stripe.createPaymentMethod({ type: "card", card: card }).then(function (res) {
      if (res.error) {
        errors.textContent = res.error.message;
        button.disabled = false;
        return;
      }
      form.elements.token.value = res.paymentMethod.id;
      form.submit();
    });
  });
})();
